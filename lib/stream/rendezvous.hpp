#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace csrun::stream {

// Where a coordinator listens and the secret its workers must present.
struct Rendezvous {
  std::string address;  // a ZeroMQ endpoint: tcp://host:port or ipc:///path
  std::string secret;
  // The coordinator has ended: a worker that arrives late has nothing to do.
  bool finished = false;
};

// A per-job secret: 32 bytes from the kernel's random source, as hex.
std::string make_secret();

// Writes the rendezvous file atomically, readable by its owner only (0600).
void write_rendezvous(const std::filesystem::path& file, const Rendezvous& rendezvous);

// Reads a rendezvous file; nullopt while it does not exist. Throws std::runtime_error naming the
// file when it is malformed.
std::optional<Rendezvous> read_rendezvous(const std::filesystem::path& file);

// Waits for the file to appear; throws std::runtime_error after `timeout`.
Rendezvous wait_for_rendezvous(const std::filesystem::path& file, std::chrono::seconds timeout);

}  // namespace csrun::stream

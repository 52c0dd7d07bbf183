#include "rendezvous.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace csrun::stream {

namespace fs = std::filesystem;

std::string make_secret() {
  std::array<unsigned char, 32> random{};
  std::ifstream source("/dev/urandom", std::ios::binary);
  if (!source.read(reinterpret_cast<char*>(random.data()), random.size()))
    throw std::runtime_error("cannot read /dev/urandom for the data workers' secret");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string secret;
  for (unsigned char byte : random) {
    secret += kHex[byte >> 4];
    secret += kHex[byte & 15];
  }
  return secret;
}

void write_rendezvous(const fs::path& file, const Rendezvous& rendezvous) {
  fs::path temporary = file;
  temporary += ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write the rendezvous file " + temporary.string());
  std::string text = "address " + rendezvous.address + "\nsecret " + rendezvous.secret + "\n" +
                     (rendezvous.finished ? "finished yes\n" : "");
  bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                 ::fsync(fd) == 0;
  ::close(fd);
  if (!written || std::rename(temporary.c_str(), file.c_str()) != 0) {
    fs::remove(temporary);
    throw std::runtime_error("cannot write the rendezvous file " + file.string());
  }
}

std::optional<Rendezvous> read_rendezvous(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  Rendezvous rendezvous;
  std::string key;
  while (in >> key) {
    std::string value;
    in >> value;
    if (key == "address") rendezvous.address = value;
    if (key == "secret") rendezvous.secret = value;
    if (key == "finished") rendezvous.finished = value == "yes";
  }
  if (rendezvous.address.empty() || rendezvous.secret.empty()) {
    throw std::runtime_error("the rendezvous file " + file.string() +
                             " lacks an 'address' or a 'secret' line");
  }
  return rendezvous;
}

Rendezvous wait_for_rendezvous(const fs::path& file, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto found = read_rendezvous(file)) return *found;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("no coordinator wrote " + file.string() + " within " +
                           std::to_string(timeout.count()) + " s");
}

}  // namespace csrun::stream

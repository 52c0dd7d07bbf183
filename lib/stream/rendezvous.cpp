#include "rendezvous.hpp"

#include <array>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "storage/atomic_file.hpp"

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
  std::string text = "address " + rendezvous.address + "\nsecret " + rendezvous.secret + "\n" +
                     (rendezvous.finished ? "finished yes\n" : "");
  // Only the job's user may read the secret.
  storage::write_file_atomically(file, text, 0600);
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

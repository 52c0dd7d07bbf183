#include "event_file.hpp"

#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "storage/crc32c.hpp"
#include "storage/directories.hpp"

namespace csrun::runner {

namespace {

// Protocol buffer wire format, just what Event and Summary need.
void varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void tag(std::string& out, int field, int wire_type) {
  varint(out, static_cast<std::uint64_t>(field << 3 | wire_type));
}

void fixed(std::string& out, std::uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void bytes_field(std::string& out, int field, std::string_view bytes) {
  tag(out, field, 2);
  varint(out, bytes.size());
  out.append(bytes);
}

double wall_time() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5 }
std::string event_header(std::int64_t step) {
  std::string event;
  tag(event, 1, 1);
  fixed(event, std::bit_cast<std::uint64_t>(wall_time()), 8);
  tag(event, 2, 0);
  varint(event, static_cast<std::uint64_t>(step));
  return event;
}

}  // namespace

std::uint32_t masked_crc32c(std::string_view bytes) {
  std::uint32_t crc = storage::crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

EventFile::EventFile(const std::string& directory) {
  storage::make_directories(directory);
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  path_ = (std::filesystem::path(directory) /
           ("events.out.tfevents." + std::to_string(static_cast<std::int64_t>(wall_time())) + "." +
            host.data()))
              .string();
  file_.open(path_, std::ios::binary | std::ios::app);
  if (!file_) throw std::runtime_error("cannot create the TensorBoard event file " + path_);
  std::string event = event_header(0);
  bytes_field(event, 3, "brain.Event:2");
  record(event);
}

void EventFile::scalar(std::string_view name, double value, std::int64_t step) {
  // Summary { repeated Value value = 1 }, Value { string tag = 1; float simple_value = 2 }
  std::string summary_value;
  bytes_field(summary_value, 1, name);
  tag(summary_value, 2, 5);
  fixed(summary_value, std::bit_cast<std::uint32_t>(static_cast<float>(value)), 4);
  std::string summary;
  bytes_field(summary, 1, summary_value);
  std::string event = event_header(step);
  bytes_field(event, 5, summary);
  record(event);
}

void EventFile::record(const std::string& event) {
  std::string length;
  fixed(length, event.size(), 8);
  std::string crc_of_length;
  fixed(crc_of_length, masked_crc32c(length), 4);
  std::string crc_of_data;
  fixed(crc_of_data, masked_crc32c(event), 4);
  file_ << length << crc_of_length << event << crc_of_data;
  if (!file_)
    throw std::runtime_error("cannot write the TensorBoard event file " + path_ + ": " +
                             std::strerror(errno));
}

}  // namespace csrun::runner

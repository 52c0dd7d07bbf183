// The data stream's frame decoder on arbitrary bytes, as a hostile peer would send them: a
// FrameError or a message; and what decodes re-encodes to a frame that decodes the same.

#include <cstring>
#include <span>

#include "stream/frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace csrun::stream;
  Message message;
  try {
    message = decode(std::span(reinterpret_cast<const std::byte*>(data), size));
  } catch (const FrameError&) {
    return 0;
  }
  std::vector<std::byte> again = encode(message);
  std::vector<std::byte> twice = encode(decode(again));
  if (again != twice) __builtin_trap();
  return 0;
}

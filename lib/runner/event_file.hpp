#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace csrun::runner {

// TFRecord framing's masked CRC-32C.
std::uint32_t masked_crc32c(std::string_view bytes);

// A TensorBoard event file (events.out.tfevents.<time>.<host>) of scalar summaries: TFRecord
// records (length, masked CRC of the length, an Event protocol buffer, masked CRC of the data).
class EventFile {
 public:
  // Creates the file in `directory` (made when missing) and writes its file_version event.
  explicit EventFile(const std::string& directory);
  void scalar(std::string_view tag, double value, std::int64_t step);
  void flush() { file_.flush(); }
  const std::string& path() const { return path_; }

 private:
  void record(const std::string& event);
  std::string path_;
  std::ofstream file_;
};

}  // namespace csrun::runner

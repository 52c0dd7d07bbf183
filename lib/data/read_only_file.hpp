#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace csrun::data {

// A dataset file read where a batch needs it (pread at given offsets), so a reader's memory stays
// flat in the dataset's size. Errors name the file, the item read and the system's reason.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(std::string path);
  ~ReadOnlyFile();
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&&) = delete;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  // Fills `bytes` from `offset` on; `item` and `index` name what they hold in an error
  // ("<path>: example 7 cannot be read (the file ended: truncated?)").
  void read_at(std::uint64_t offset, std::span<std::byte> bytes, std::string_view item,
               std::uint64_t index) const;

 private:
  std::string path_;
  int descriptor_ = -1;
};

}  // namespace csrun::data

#pragma once

// The examples of the CSV files a loader's meta.dat files list (csv_tables.hpp), read one record
// at a time where a batch needs it. Opening scans each file once for where its records start and
// keeps only that (16 bytes an example), so a reader's memory stays flat in the dataset's size.
// Internal to lib/data.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "csv_records.hpp"
#include "dataloader.hpp"
#include "read_only_file.hpp"
#include "recent_files.hpp"

namespace csrun::data {

// One CSV file: its header and where each example's record starts.
struct CsvFile {
  std::string source;
  std::vector<std::string> header;
  std::vector<std::uint64_t> starts;  // each example's first byte, then the last one's end
  std::vector<std::int64_t> lines;    // each example's first line

  std::int64_t examples() const { return static_cast<std::int64_t>(lines.size()); }

  // The index of column `name`; when it is missing, nothing, or (`needed`) an error naming the
  // file and the expected `columns`.
  std::optional<std::size_t> column(const std::string& name, bool needed,
                                    const std::string& columns) const;
};

class CsvExamples {
 public:
  // Throws std::runtime_error naming the file (and line) of what is wrong: a missing or
  // malformed meta.dat, a file without a header, fewer records than meta.dat lists, a quoted
  // field that never closes.
  explicit CsvExamples(const DataloaderSpec& loader);

  std::int64_t size() const { return first_example_.back(); }
  const std::vector<CsvFile>& files() const { return files_; }

  struct Example {
    std::size_t file;
    CsvRecord record;
  };
  // Example `index` of all of them, in meta.dat's order; throws std::runtime_error naming the
  // file and line of a malformed record.
  Example read(std::int64_t index) const;

 private:
  std::vector<CsvFile> files_;
  std::vector<std::int64_t> first_example_{0};
  mutable RecentFiles<ReadOnlyFile> open_;
};

}  // namespace csrun::data

#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "csv_records.hpp"
#include "dataloader.hpp"

namespace csrun::data {

// The Model Zoo's CSV dataset layout (BERT pre-training, NER, BertSum): each data directory's
// meta.dat lists "<csv file> <number of examples>", one file a line.
struct MetaEntry {
  std::filesystem::path file;
  std::int64_t examples = 0;
};

// The entries of `directory`/meta.dat; `problem` says what is wrong when it cannot be read.
std::vector<MetaEntry> read_meta(const std::string& directory, std::string& problem);

// The index of column `name` in the `header` of file `source`; when it is missing, nothing, or
// (`needed`) an error naming the file and the expected `columns`.
std::optional<std::size_t> header_column(const std::vector<std::string>& header,
                                         const std::string& source, const std::string& name,
                                         bool needed, const std::string& columns);

// A whole file's bytes; throws std::runtime_error naming it when it cannot be read.
std::string read_text(const std::filesystem::path& path);

// One CSV file of a meta.dat, read as records after its header, with the header's column index.
struct CsvTable {
  std::string source;
  std::vector<std::string> header;
  std::vector<CsvRecord> records;  // the examples meta.dat counts

  // The index of column `name`; when it is missing, nothing, or (`needed`) an error naming the
  // file and the expected `columns`.
  std::optional<std::size_t> column(const std::string& name, bool needed,
                                    const std::string& columns) const;
};

// Every CSV file of the loader's data directories. Throws std::runtime_error naming the file and
// line of what is wrong.
std::vector<CsvTable> read_tables(const DataloaderSpec& loader);

// The record's field `column`; throws std::invalid_argument when the record is shorter.
const std::string& record_field(const CsvRecord& record, std::size_t column);

// The examples the loader's meta.dat files list, reporting what is wrong at data_dir; checks too
// that there is at least one batch.
std::int64_t check_meta_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics);

}  // namespace csrun::data

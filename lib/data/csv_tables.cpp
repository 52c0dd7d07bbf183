#include "csv_tables.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data_paths.hpp"

namespace csrun::data {

namespace fs = std::filesystem;

std::vector<MetaEntry> read_meta(const std::string& directory, std::string& problem) {
  fs::path meta = fs::path(directory) / "meta.dat";
  if (std::string not_a_file = regular_file_problem(meta.string());
      !not_a_file.empty() && not_a_file != "does not exist") {
    problem = meta.string() + " " + not_a_file;
    return {};
  }
  std::ifstream lines(meta);
  if (!lines) {
    problem = "Meta file is missing in the input directory: " + directory + ".";
    return {};
  }
  std::vector<MetaEntry> entries;
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream fields(line);
    std::string file;
    long long count = -1;
    if (!(fields >> file)) continue;
    if (!(fields >> count) || count < 0) {
      problem = meta.string() + " line " + std::to_string(number) +
                ": expected '<csv file> <number of examples>'";
      return {};
    }
    fs::path csv = fs::path(directory) / file;
    if (std::string not_a_file = regular_file_problem(csv.string()); !not_a_file.empty()) {
      problem = meta.string() + " line " + std::to_string(number) + " lists '" + file +
                "', which " +
                (not_a_file == "does not exist" ? "is not in " + directory : not_a_file);
      return {};
    }
    entries.push_back({csv, count});
  }
  return entries;
}

std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::optional<std::size_t> header_column(const std::vector<std::string>& header,
                                         const std::string& source, const std::string& name,
                                         bool needed, const std::string& columns) {
  auto found = std::find(header.begin(), header.end(), name);
  if (found != header.end()) return static_cast<std::size_t>(found - header.begin());
  if (!needed) return std::nullopt;
  throw std::runtime_error(source + " line 1: the header has no column '" + name + "' (" + columns +
                           ")");
}

std::optional<std::size_t> CsvTable::column(const std::string& name, bool needed,
                                            const std::string& columns) const {
  return header_column(header, source, name, needed, columns);
}

std::vector<CsvTable> read_tables(const DataloaderSpec& loader) {
  std::vector<CsvTable> tables;
  for (const std::string& directory : loader.data_dirs) {
    std::string problem;
    std::vector<MetaEntry> entries = read_meta(directory, problem);
    if (!problem.empty()) throw std::runtime_error(problem);
    for (const MetaEntry& entry : entries) {
      std::string source = entry.file.string();
      std::vector<CsvRecord> records = parse_csv(read_text(entry.file), source);
      if (records.empty()) throw std::runtime_error(source + " is empty: expected a header line");
      auto available = static_cast<std::int64_t>(records.size()) - 1;
      if (available < entry.examples) {
        throw std::runtime_error(source + " holds " + std::to_string(available) +
                                 " examples but meta.dat lists " + std::to_string(entry.examples));
      }
      std::vector<std::string> header = std::move(records.front().fields);
      records.erase(records.begin());
      records.resize(static_cast<std::size_t>(entry.examples));
      tables.push_back({source, std::move(header), std::move(records)});
    }
  }
  if (tables.empty()) throw std::runtime_error("no CSV files in " + loader.data_dirs.front());
  return tables;
}

const std::string& record_field(const CsvRecord& record, std::size_t column) {
  if (column >= record.fields.size())
    throw std::invalid_argument("the record has " + std::to_string(record.fields.size()) +
                                " fields, fewer than the header's columns");
  return record.fields[column];
}

std::int64_t check_meta_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics) {
  const config::Node& data_dir = *loader.params.find("data_dir");
  std::int64_t examples = 0;
  for (const std::string& directory : loader.data_dirs) {
    if (!require_directory(directory, data_dir, diagnostics)) continue;
    std::string problem;
    for (const MetaEntry& entry : read_meta(directory, problem)) {
      if (__builtin_add_overflow(examples, entry.examples, &examples)) {
        problem = "the meta.dat files list more examples than a 64-bit count holds (" +
                  entry.file.string() + " adds " + std::to_string(entry.examples) + ")";
        examples = 0;
        break;
      }
    }
    if (!problem.empty()) diagnostics.error(data_dir.mark(), data_dir.path(), problem);
  }
  if (examples > 0 && examples < loader.batch_size) {
    diagnostics.error(data_dir.mark(), data_dir.path(),
                      "the dataset holds " + std::to_string(examples) +
                          " examples, fewer than one batch of batch_size " +
                          std::to_string(loader.batch_size));
  }
  return examples;
}

}  // namespace csrun::data

#include "csv_examples.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <memory>
#include <span>
#include <stdexcept>

#include "csv_tables.hpp"

namespace csrun::data {

namespace {

// Where the first `wanted` records of a CSV file start, and where the last of them ends, found by
// reading the file in pieces: a record ends at a line break outside quotes (RFC 4180: a quoted
// field may hold line breaks; a doubled quote toggles twice) and a blank line holds none, as
// parse_csv reads them. Fewer when the file holds fewer.
struct RecordStarts {
  std::vector<std::uint64_t> starts;  // each record's first byte, then the last one's end
  std::vector<std::int64_t> lines;
};

RecordStarts scan_records(const std::string& source, std::int64_t wanted) {
  std::ifstream in(source, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + source);
  RecordStarts found;
  std::array<char, 1 << 16> piece{};
  std::uint64_t offset = 0;
  std::int64_t line = 1;
  bool in_record = false;
  bool quoted = false;
  while (in) {
    in.read(piece.data(), piece.size());
    auto got = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < got; ++i, ++offset) {
      char c = piece[i];
      if (!in_record) {
        if (c == '\n') ++line;
        if (c == '\n' || c == '\r') continue;
        in_record = true;
        found.starts.push_back(offset);
        found.lines.push_back(line);
      }
      if (c == '"') quoted = !quoted;
      if (c != '\n') continue;
      ++line;
      if (quoted) continue;
      in_record = false;
      if (static_cast<std::int64_t>(found.lines.size()) == wanted) {
        found.starts.push_back(offset + 1);
        return found;
      }
    }
  }
  if (in_record && quoted) {
    throw std::runtime_error(source + " line " + std::to_string(found.lines.back()) +
                             ": a quoted field never closes");
  }
  found.starts.push_back(offset);
  return found;
}

std::string read_bytes(const ReadOnlyFile& file, std::uint64_t first, std::uint64_t end,
                       std::string_view item, std::uint64_t index) {
  std::string text(end - first, '\0');
  file.read_at(first, std::as_writable_bytes(std::span(text.data(), text.size())), item, index);
  return text;
}

CsvFile index_file(const MetaEntry& entry) {
  CsvFile file{entry.file.string(), {}, {}, {}};
  RecordStarts records = scan_records(file.source, entry.examples + 1);
  if (records.lines.empty())
    throw std::runtime_error(file.source + " is empty: expected a header line");
  auto available = static_cast<std::int64_t>(records.lines.size()) - 1;
  if (available < entry.examples) {
    throw std::runtime_error(file.source + " holds " + std::to_string(available) +
                             " examples but meta.dat lists " + std::to_string(entry.examples));
  }
  std::string header =
      read_bytes(ReadOnlyFile(file.source), records.starts[0], records.starts[1], "header", 0);
  file.header = std::move(parse_csv(header, file.source).front().fields);
  file.starts.assign(records.starts.begin() + 1, records.starts.end());
  file.lines.assign(records.lines.begin() + 1, records.lines.end());
  return file;
}

}  // namespace

std::optional<std::size_t> CsvFile::column(const std::string& name, bool needed,
                                           const std::string& columns) const {
  return header_column(header, source, name, needed, columns);
}

CsvExamples::CsvExamples(const DataloaderSpec& loader) {
  for (const std::string& directory : loader.data_dirs) {
    std::string problem;
    std::vector<MetaEntry> entries = read_meta(directory, problem);
    if (!problem.empty()) throw std::runtime_error(problem);
    for (const MetaEntry& entry : entries) {
      files_.push_back(index_file(entry));
      first_example_.push_back(first_example_.back() + files_.back().examples());
    }
  }
  if (files_.empty()) throw std::runtime_error("no CSV files in " + loader.data_dirs.front());
}

CsvExamples::Example CsvExamples::read(std::int64_t index) const {
  auto after = std::upper_bound(first_example_.begin(), first_example_.end(), index);
  auto file = static_cast<std::size_t>(after - first_example_.begin() - 1);
  const CsvFile& csv = files_[file];
  auto example = static_cast<std::size_t>(index - first_example_[file]);
  const ReadOnlyFile& source =
      open_.get(file, [&] { return std::make_unique<ReadOnlyFile>(csv.source); });
  std::string text =
      read_bytes(source, csv.starts[example], csv.starts[example + 1], "example", example);
  std::vector<CsvRecord> records = parse_csv(text, csv.source, csv.lines[example]);
  if (records.size() != 1) {
    throw std::runtime_error(csv.source + " line " + std::to_string(csv.lines[example]) +
                             ": a carriage return alone ends a record inside this one (lines end "
                             "with a line feed)");
  }
  return {file, std::move(records.front())};
}

}  // namespace csrun::data

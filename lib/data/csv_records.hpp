#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace csrun::data {

// One record of a CSV file (RFC 4180: quoted fields may hold commas, doubled quotes and line
// breaks) and the line it starts on.
struct CsvRecord {
  std::int64_t line = 0;
  std::vector<std::string> fields;
};

// Every record of `text`, whose first line is `source`'s line `first_line`; throws
// std::runtime_error naming `source` and the line of a quoted field that never closes or of text
// after a closing quote.
std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& source,
                                 std::int64_t first_line = 1);

// The strings of a Python list literal of string literals, as the Model Zoo's BERT CSV files
// store tokens: ['[CLS]', 'the', "don't", ...]. Throws std::invalid_argument saying what is
// malformed.
std::vector<std::string> parse_string_list(std::string_view text);

// The integers of a list literal such as "[0, 0, 1]". Throws std::invalid_argument.
std::vector<std::int64_t> parse_integer_list(std::string_view text);

}  // namespace csrun::data

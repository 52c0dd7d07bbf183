#include "csv_records.hpp"

#include <charconv>
#include <stdexcept>

namespace csrun::data {

namespace {

class CsvScanner {
 public:
  CsvScanner(std::string_view text, const std::string& source, std::int64_t first_line)
      : text_(text), source_(source), line_(first_line) {}

  std::vector<CsvRecord> records() {
    std::vector<CsvRecord> result;
    while (at_ < text_.size()) {
      // A blank line holds no record; a line of "" holds one empty field (as the record scan of
      // a CSV file read in pieces counts them).
      bool blank = text_[at_] == '\n' || text_[at_] == '\r';
      CsvRecord record{line_, {}};
      bool more = true;
      while (more)
        more = field(record.fields);
      if (!blank) result.push_back(std::move(record));
    }
    return result;
  }

 private:
  // Reads one field into `fields`; says whether another field of the same record follows.
  bool field(std::vector<std::string>& fields) {
    std::string value;
    if (at_ < text_.size() && text_[at_] == '"') {
      quoted(value);
    } else {
      while (at_ < text_.size() && text_[at_] != ',' && text_[at_] != '\n' && text_[at_] != '\r')
        value += text_[at_++];
    }
    fields.push_back(std::move(value));
    if (at_ < text_.size() && text_[at_] == ',') {
      ++at_;
      return true;
    }
    end_of_line();
    return false;
  }

  void quoted(std::string& value) {
    std::int64_t opened = line_;
    ++at_;
    for (;;) {
      if (at_ >= text_.size()) fail(opened, "a quoted field never closes");
      char c = text_[at_++];
      if (c == '\n') ++line_;
      if (c != '"') {
        value += c;
        continue;
      }
      if (at_ < text_.size() && text_[at_] == '"') {
        value += '"';
        ++at_;
        continue;
      }
      break;
    }
    if (at_ < text_.size() && text_[at_] != ',' && text_[at_] != '\n' && text_[at_] != '\r')
      fail(line_, "text follows a closing quote (a quote inside a field must be doubled)");
  }

  void end_of_line() {
    if (at_ < text_.size() && text_[at_] == '\r') ++at_;
    if (at_ < text_.size() && text_[at_] == '\n') ++at_;
    ++line_;
  }

  [[noreturn]] void fail(std::int64_t line, const std::string& what) const {
    throw std::runtime_error(source_ + " line " + std::to_string(line) + ": " + what);
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t at_ = 0;
  std::int64_t line_;
};

// Walks the items of a "[a, b, ...]" literal.
class ListScanner {
 public:
  explicit ListScanner(std::string_view text) : text_(text) {
    skip_space();
    expect('[');
  }

  // Whether another item follows (and moves onto it).
  bool next() {
    skip_space();
    if (at_ < text_.size() && text_[at_] == ']') {
      ++at_;
      skip_space();
      if (at_ != text_.size()) throw std::invalid_argument("text after the closing ']'");
      return false;
    }
    if (started_) {
      if (at_ >= text_.size() || text_[at_] != ',')
        throw std::invalid_argument("expected ',' or ']' at offset " + std::to_string(at_));
      ++at_;
      skip_space();
      if (at_ < text_.size() && text_[at_] == ']') return next();  // trailing comma
    }
    started_ = true;
    return true;
  }

  std::string string_item() {
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"'))
      throw std::invalid_argument("expected a quoted token at offset " + std::to_string(at_));
    char quote = text_[at_++];
    std::string value;
    while (at_ < text_.size() && text_[at_] != quote) {
      char c = text_[at_++];
      if (c == '\\' && at_ < text_.size()) c = escaped(text_[at_++]);
      value += c;
    }
    if (at_ >= text_.size()) throw std::invalid_argument("a token's quote never closes");
    ++at_;
    return value;
  }

  std::int64_t integer_item() {
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
    if (error != std::errc())
      throw std::invalid_argument("expected an integer at offset " + std::to_string(at_));
    at_ = static_cast<std::size_t>(end - text_.data());
    return value;
  }

 private:
  static char escaped(char c) {
    switch (c) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      default:
        return c;
    }
  }

  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t'))
      ++at_;
  }

  void expect(char c) {
    if (at_ >= text_.size() || text_[at_] != c)
      throw std::invalid_argument(std::string("expected '") + c + "' at offset " +
                                  std::to_string(at_));
    ++at_;
  }

  std::string_view text_;
  std::size_t at_ = 0;
  bool started_ = false;
};

}  // namespace

std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& source,
                                 std::int64_t first_line) {
  return CsvScanner(text, source, first_line).records();
}

std::vector<std::string> parse_string_list(std::string_view text) {
  std::vector<std::string> items;
  ListScanner list(text);
  while (list.next())
    items.push_back(list.string_item());
  return items;
}

std::vector<std::int64_t> parse_integer_list(std::string_view text) {
  std::vector<std::int64_t> items;
  ListScanner list(text);
  while (list.next())
    items.push_back(list.integer_item());
  return items;
}

}  // namespace csrun::data

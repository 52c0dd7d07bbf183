#include "wordpiece.hpp"

#include <cctype>

namespace csrun::data {

namespace {

bool is_punctuation(unsigned char c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
         (c >= 123 && c <= 126);
}

bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Words and punctuation characters, whitespace dropped, control characters removed.
std::vector<std::string> basic_tokens(std::string_view text, bool lower) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out.push_back(std::move(word));
    word.clear();
  };
  for (char raw : text) {
    auto c = static_cast<unsigned char>(raw);
    if (is_space(c)) {
      flush();
    } else if (c < 32 || c == 127) {
      continue;
    } else if (is_punctuation(c)) {
      flush();
      out.emplace_back(1, raw);
    } else {
      word.push_back(lower ? static_cast<char>(std::tolower(c)) : raw);
    }
  }
  flush();
  return out;
}

constexpr std::size_t kMaxWordCharacters = 100;

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(const Vocabulary& vocabulary, bool lower,
                                       std::string unknown)
    : vocabulary_(vocabulary), lower_(lower), unknown_(std::move(unknown)) {}

std::vector<std::string> WordPieceTokenizer::tokens(std::string_view text) const {
  std::vector<std::string> out;
  for (const std::string& word : basic_tokens(text, lower_))
    word_pieces(word, out);
  return out;
}

void WordPieceTokenizer::word_pieces(const std::string& word, std::vector<std::string>& out) const {
  if (word.size() > kMaxWordCharacters) {
    out.push_back(unknown_);
    return;
  }
  std::vector<std::string> pieces;
  std::size_t start = 0;
  while (start < word.size()) {
    std::size_t end = word.size();
    std::string found;
    for (; end > start; --end) {
      std::string piece = (start > 0 ? "##" : "") + word.substr(start, end - start);
      if (vocabulary_.find(piece)) {
        found = std::move(piece);
        break;
      }
    }
    if (found.empty()) {
      out.push_back(unknown_);
      return;
    }
    pieces.push_back(std::move(found));
    start = end;
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

}  // namespace csrun::data

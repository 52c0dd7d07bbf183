#include "vocabulary.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

#include "csv_tables.hpp"

namespace csrun::data {

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Vocabulary::Vocabulary(const std::string& path, bool lower, const std::string& oov_token)
    : path_(path) {
  std::istringstream lines(read_text(path));
  std::string token;
  while (std::getline(lines, token)) {
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
      token.pop_back();
    if (lower) token = lowered(token);
    ids_.emplace(token, static_cast<std::int32_t>(words_.size()));
    words_.push_back(token);
  }
  oov_ = require(lower ? lowered(oov_token) : oov_token, "oov_token");
}

std::int32_t Vocabulary::require(const std::string& token, const std::string& role) const {
  auto found = ids_.find(token);
  if (found == ids_.end())
    throw std::runtime_error("vocab_file " + path_ + " has no " + role + " '" + token + "'");
  return found->second;
}

std::optional<std::int32_t> Vocabulary::find(const std::string& token) const {
  auto found = ids_.find(token);
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

}  // namespace csrun::data

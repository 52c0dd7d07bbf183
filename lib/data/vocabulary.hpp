#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace csrun::data {

// `text` in lower case (ASCII), as do_lower reads tokens and vocabularies.
std::string lowered(std::string text);

// A BERT vocabulary file: one token per line, its id the line's index; a token it lacks reads as
// oov_token's id.
class Vocabulary {
 public:
  Vocabulary(const std::string& path, bool lower, const std::string& oov_token);

  // The id of a token that must be there (a special token); throws std::runtime_error naming the
  // file and the `role` when it is not.
  std::int32_t require(const std::string& token, const std::string& role) const;
  std::optional<std::int32_t> find(const std::string& token) const;
  std::int32_t id(const std::string& token) const { return find(token).value_or(oov_); }
  const std::vector<std::string>& words() const { return words_; }
  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> words_;
  std::unordered_map<std::string, std::int32_t> ids_;
  std::int32_t oov_ = 0;
};

}  // namespace csrun::data

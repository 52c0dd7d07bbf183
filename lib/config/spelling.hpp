#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace csrun::config {

// `word` in lower case (ASCII): names the Model Zoo matches case-insensitively (optimizers,
// schedulers, callbacks) are compared so.
std::string lowercase(std::string_view word);

// The candidate a misspelled `word` most likely meant (case-insensitive edit distance with
// transpositions), or nothing when no candidate is close enough to be a typo.
std::optional<std::string> closest_match(std::string_view word,
                                         std::span<const std::string> candidates);

// "; did you mean 'max_steps'?" or an empty string.
std::string did_you_mean(std::string_view word, std::span<const std::string> candidates);

// "'a', 'b' or 'c'".
std::string quoted_list(std::span<const std::string> words, std::string_view last_joiner = "or");

// "['a', 'b', 'c']", as Python prints a list of strings (for the Model Zoo's messages).
std::string python_list(std::span<const std::string> words);

}  // namespace csrun::config

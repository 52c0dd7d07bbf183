#include "spelling.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace csrun::config {

namespace {

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// Optimal string alignment distance: insertions, deletions, substitutions, transpositions.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::size_t tolerance(std::string_view word) {
  return std::clamp<std::size_t>(word.size() / 3, 1, 3);
}

}  // namespace

std::optional<std::string> closest_match(std::string_view word,
                                         std::span<const std::string> candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = tolerance(word) + 1;
  for (const std::string& candidate : candidates) {
    std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string> candidates) {
  auto match = closest_match(word, candidates);
  return match ? "; did you mean '" + *match + "'?" : std::string();
}

std::string quoted_list(std::span<const std::string> words, std::string_view last_joiner) {
  std::string text;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0 && i + 1 == words.size()) {
      text.append(" ").append(last_joiner).append(" ");
    } else if (i > 0) {
      text.append(", ");
    }
    text.append("'").append(words[i]).append("'");
  }
  return text;
}

std::string python_list(std::span<const std::string> words) {
  std::string text = "[";
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text.append(", ");
    text.append("'").append(words[i]).append("'");
  }
  return text + "]";
}

}  // namespace csrun::config

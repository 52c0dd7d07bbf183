#include "spelling.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace csrun::config {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions, transpositions. Three
// rows of the table are enough, as a transposition looks two rows back.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[b.size()];
}

std::size_t tolerance(std::string_view word) {
  return std::clamp<std::size_t>(word.size() / 3, 1, 3);
}

}  // namespace

std::string lowercase(std::string_view word) {
  std::string lower(word);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

std::optional<std::string> closest_match(std::string_view word,
                                         std::span<const std::string> candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = tolerance(word) + 1;
  std::string lower_word = lowercase(word);
  for (const std::string& candidate : candidates) {
    // The distance is at least the difference in length.
    std::size_t length_difference = candidate.size() > word.size() ? candidate.size() - word.size()
                                                                   : word.size() - candidate.size();
    if (length_difference >= best_distance) continue;
    std::size_t distance = edit_distance(lower_word, lowercase(candidate));
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

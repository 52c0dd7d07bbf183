#include "learning_rate_groups.hpp"

#include <algorithm>
#include <stdexcept>

namespace csrun::models {

namespace {

// The end of the bracket expression that starts at `at` (the index of its ']'), or npos.
std::size_t bracket_end(std::string_view pattern, std::size_t at) {
  std::size_t i = at + 1;
  if (i < pattern.size() && pattern[i] == '!') ++i;
  if (i < pattern.size() && pattern[i] == ']') ++i;
  return pattern.find(']', i);
}

bool in_bracket(std::string_view bracket, char c) {
  bool negated = !bracket.empty() && bracket.front() == '!';
  if (negated) bracket.remove_prefix(1);
  bool found = false;
  for (std::size_t i = 0; i < bracket.size(); ++i) {
    if (i + 2 < bracket.size() && bracket[i + 1] == '-') {
      found = found || (bracket[i] <= c && c <= bracket[i + 2]);
      i += 2;
    } else {
      found = found || bracket[i] == c;
    }
  }
  return found != negated;
}

std::vector<std::string> group_names(const std::vector<LearningRateGroup>& groups) {
  std::vector<std::string> names;
  for (const LearningRateGroup& group : groups)
    names.push_back(group.name);
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}

// The groups with the optimizer's overrides applied.
std::vector<LearningRateGroup> adjusted(std::vector<LearningRateGroup> groups,
                                        const config::Node* adjustments) {
  if (!adjustments || !adjustments->is_map()) return groups;
  for (const config::Node::Entry& entry : adjustments->entries()) {
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const LearningRateGroup& g) { return g.name == entry.key; });
    if (group == groups.end()) {
      throw std::invalid_argument("adjust_learning_rate names the group '" + entry.key +
                                  "', which this network does not define (its groups: " +
                                  joined(group_names(groups)) + ")");
    }
    if (!entry.value.is_number()) {
      throw std::invalid_argument("adjust_learning_rate." + entry.key +
                                  " must be a number, found " + entry.value.render());
    }
    group->scale = entry.value.as_number();
  }
  return groups;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matching with backtracking to the last '*'.
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
      continue;
    }
    bool matched = false;
    std::size_t next = p + 1;
    if (p < pattern.size() && pattern[p] == '[') {
      std::size_t end = bracket_end(pattern, p);
      if (end != std::string_view::npos) {
        matched = in_bracket(pattern.substr(p + 1, end - p - 1), text[t]);
        next = end + 1;
      } else {
        matched = text[t] == '[';
      }
    } else if (p < pattern.size()) {
      matched = pattern[p] == '?' || pattern[p] == text[t];
    }
    if (matched) {
      p = next;
      ++t;
      continue;
    }
    if (star == std::string_view::npos) return false;
    p = star + 1;
    t = ++resume;
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

nn::LearningRateScales learning_rate_scales(const std::vector<LearningRateGroup>& groups,
                                            const config::Node* adjustments,
                                            const std::vector<std::string>& parameter_names) {
  std::vector<LearningRateGroup> effective = adjusted(groups, adjustments);
  nn::LearningRateScales scales;
  for (const std::string& name : parameter_names) {
    const LearningRateGroup* chosen = nullptr;
    for (const LearningRateGroup& group : effective) {
      if (group.scale == 1.0) continue;
      bool member = std::any_of(group.patterns.begin(), group.patterns.end(),
                                [&](const std::string& p) { return glob_match(p, name); });
      if (!member) continue;
      if (chosen && chosen->scale != group.scale) {
        throw std::invalid_argument("the learning-rate groups " + chosen->name + " (" +
                                    std::to_string(chosen->scale) + ") and " + group.name + " (" +
                                    std::to_string(group.scale) + ") both claim " + name +
                                    "; give them the same scale");
      }
      chosen = &group;
    }
    if (chosen) scales[name] = chosen->scale;
  }
  return scales;
}

}  // namespace csrun::models

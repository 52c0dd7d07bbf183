#include "checkpoint_names.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

namespace csrun::runner {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kStep = "{step}";

std::string with_step(std::string name, const std::string& step) {
  for (auto at = name.find(kStep); at != std::string::npos; at = name.find(kStep, at + step.size()))
    name.replace(at, kStep.size(), step);
  return name;
}

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "20" or "20_20261122_101010": the step and the time stamp, if `text` is either.
std::optional<std::pair<std::int64_t, std::string>> step_and_stamp(std::string_view text) {
  std::string_view digits = text;
  std::string stamp;
  constexpr std::size_t kStampSize = 16;  // _YYYYMMDD_HHMMSS
  if (text.size() > kStampSize && text[text.size() - kStampSize] == '_') {
    std::string_view tail = text.substr(text.size() - kStampSize + 1);
    if (all_digits(tail.substr(0, 8)) && tail[8] == '_' && all_digits(tail.substr(9))) {
      digits = text.substr(0, text.size() - kStampSize);
      stamp = std::string(tail);
    }
  }
  if (!all_digits(digits)) return std::nullopt;
  std::int64_t step = 0;
  auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (parsed.ec != std::errc() || parsed.ptr != digits.data() + digits.size()) return std::nullopt;
  return std::pair{step, stamp};
}

}  // namespace

CheckpointNames::CheckpointNames(std::string checkpoint_name)
    : checkpoint_name_(std::move(checkpoint_name)) {}

fs::path CheckpointNames::file(const fs::path& directory, std::int64_t step,
                               const std::string& time_stamp) const {
  std::string step_text = std::to_string(step);
  if (!time_stamp.empty()) step_text += "_" + time_stamp;
  return directory / with_step(checkpoint_name_, step_text);
}

std::vector<CheckpointNames::Found> CheckpointNames::find(const fs::path& directory) const {
  std::vector<Found> found;
  fs::path files = folder(directory);
  std::string pattern = fs::path(checkpoint_name_).filename().string();
  auto first = pattern.find(kStep);
  if (first == std::string::npos) return found;
  std::string prefix = pattern.substr(0, first);
  std::string suffix = pattern.substr(first + kStep.size());
  std::error_code error;
  if (!fs::is_directory(files, error)) return found;
  for (const fs::directory_entry& entry : fs::directory_iterator(files, error)) {
    std::string file = entry.path().filename().string();
    if (file.size() <= prefix.size() + suffix.size() || !file.starts_with(prefix) ||
        !file.ends_with(suffix))
      continue;
    // The step is what stands in the first {step}: the shortest run of digits with its stamp
    // that makes the whole name, as the pattern names it again wherever {step} comes back.
    std::string_view middle(file);
    middle = middle.substr(prefix.size(), middle.size() - prefix.size() - suffix.size());
    for (std::size_t end = 1; end <= middle.size(); ++end) {
      std::string step_text(middle.substr(0, end));
      auto parsed = step_and_stamp(step_text);
      if (!parsed || with_step(pattern, step_text) != file) continue;
      found.push_back({parsed->first, parsed->second, entry.path().string()});
      break;
    }
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.step, a.time_stamp, a.path) < std::tie(b.step, b.time_stamp, b.path);
  });
  return found;
}

fs::path CheckpointNames::folder(const fs::path& directory) const {
  return directory / fs::path(checkpoint_name_).parent_path();
}

std::string CheckpointNames::convention() const {
  return with_step(checkpoint_name_, "(step)(_timestamp)?");
}

}  // namespace csrun::runner

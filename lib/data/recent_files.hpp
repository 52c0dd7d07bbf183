#pragma once

// The handles of the dataset files a reader used last, so that a set of many files read example
// by example, in shuffled order, neither opens a file per example nor holds them all open.
// Internal to lib/data.

#include <cstddef>
#include <memory>
#include <unordered_map>

namespace csrun::data {

template <class Handle>
class RecentFiles {
 public:
  // File `file`'s handle; when none is kept, the one open() returns (a std::unique_ptr<Handle>;
  // it throws when the file cannot be opened).
  template <class Open>
  const Handle& get(std::size_t file, Open&& open) {
    if (auto found = kept_.find(file); found != kept_.end()) return *found->second;
    if (kept_.size() >= kKept) kept_.clear();
    return *kept_.emplace(file, open()).first->second;
  }

 private:
  static constexpr std::size_t kKept = 64;
  std::unordered_map<std::size_t, std::unique_ptr<Handle>> kept_;
};

}  // namespace csrun::data

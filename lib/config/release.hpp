#pragma once

#include <string>

namespace csrun::config {

// The Model Zoo releases whose params csrun knows key by key, oldest first. Keys of the releases
// between them (1.7, 2.1, 2.3, ...) count as the next one listed.
enum class Release { r1_6, r1_9, r2_0, r2_2, r2_4, r2_6, r2_10 };

std::string release_name(Release release);  // "1.6", ..., "2.10"

// The releases from `first` to `last`, as a set.
struct ReleaseRange {
  Release first = Release::r1_6;
  Release last = Release::r2_10;

  bool contains(Release release) const { return first <= release && release <= last; }
  // "2.4 and later", "1.6 to 2.0", "1.9".
  std::string describe() const;
};

}  // namespace csrun::config

#include "host_memory.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace csrun::storage {

namespace {

std::uint64_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

// A limit file's value: a byte count, or nothing for "max" (v2), an unreadable file, or v1's
// "unlimited" (a page-rounded number near 2^63).
std::optional<std::uint64_t> read_limit(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text.empty() || text == "max") return std::nullopt;
  if (text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19)
    return std::nullopt;
  std::uint64_t bytes = std::stoull(text);
  if (bytes >= (std::uint64_t{1} << 62)) return std::nullopt;
  return bytes;
}

// The memory limit file of a /proc/self/cgroup line, or an empty name for lines of other v1
// controllers: v2's "0::/path" and v1's "N:...memory...:/path".
struct Hierarchy {
  std::filesystem::path directory;
  std::string limit_file;
  std::string cgroup;
};

std::optional<Hierarchy> memory_hierarchy(std::string_view line,
                                          const std::filesystem::path& root) {
  auto first = line.find(':');
  auto second = line.find(':', first == std::string_view::npos ? first : first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos) return std::nullopt;
  std::string_view controllers = line.substr(first + 1, second - first - 1);
  std::string cgroup(line.substr(second + 1));
  if (cgroup.empty() || cgroup.front() != '/') return std::nullopt;
  if (line.substr(0, first) == "0" && controllers.empty())
    return Hierarchy{root, "memory.max", cgroup};
  std::stringstream names{std::string(controllers)};
  for (std::string name; std::getline(names, name, ',');)
    if (name == "memory") return Hierarchy{root / "memory", "memory.limit_in_bytes", cgroup};
  return std::nullopt;
}

}  // namespace

std::optional<CgroupLimit> cgroup_memory_limit(std::string_view proc_self_cgroup,
                                               const std::filesystem::path& cgroup_root) {
  std::optional<CgroupLimit> tightest;
  std::stringstream lines{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    auto hierarchy = memory_hierarchy(line, cgroup_root);
    if (!hierarchy) continue;
    // A cgroup's ancestors cap it too: walk from the cgroup up to the hierarchy's root.
    std::filesystem::path cgroup = std::filesystem::path(hierarchy->cgroup).relative_path();
    for (;; cgroup = cgroup.parent_path()) {
      auto bytes = read_limit(hierarchy->directory / cgroup / hierarchy->limit_file);
      if (bytes && (!tightest || *bytes < tightest->bytes))
        tightest = CgroupLimit{*bytes, "/" + cgroup.generic_string()};
      if (cgroup.empty()) break;
    }
  }
  return tightest;
}

namespace {

std::optional<CgroupLimit> own_cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  return cgroup_memory_limit(text.str(), "/sys/fs/cgroup");
}

// The usable memory and, when a cgroup caps it below the machine's, that cgroup's limit.
struct UsableMemory {
  std::uint64_t bytes = 0;
  std::optional<CgroupLimit> cap;
};

UsableMemory usable_memory() {
  std::uint64_t machine = physical_memory_bytes();
  auto cgroup = own_cgroup_limit();
  if (!cgroup || (machine != 0 && cgroup->bytes >= machine)) return {machine, std::nullopt};
  return {cgroup->bytes, cgroup};
}

}  // namespace

std::uint64_t usable_memory_bytes() {
  return usable_memory().bytes;
}

bool exceeds_usable_memory(double bytes, double share) {
  auto usable = static_cast<double>(usable_memory_bytes());
  return usable > 0 && bytes > usable * share;
}

std::string memory_size(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  char text[64];
  if (bytes < kMiB) {
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  } else if (bytes < 1024.0 * kMiB) {
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / kMiB);
  } else {
    std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * kMiB));
  }
  return text;
}

std::string usable_memory_text() {
  UsableMemory usable = usable_memory();
  std::string size = memory_size(static_cast<double>(usable.bytes));
  if (usable.cap) return "the " + size + " that cgroup " + usable.cap->cgroup + " allows";
  return "this machine's " + size;
}

}  // namespace csrun::storage

#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace csrun::storage {

// The memory this process may use, in bytes (0 when the system does not say): the machine's
// physical memory, or less where the process's cgroup caps it (a SLURM job's --mem, a container).
std::uint64_t usable_memory_bytes();

// Whether `bytes` exceed `share` of the usable memory (never when the system does not say):
// what csrun refuses to allocate rather than fail midway.
bool exceeds_usable_memory(double bytes, double share = 1.0);

// Bytes as "12.3 GiB" (or "45.6 MiB" below 1 GiB, "7.8 KiB" below 1 MiB), for messages about
// memory.
std::string memory_size(double bytes);

// The usable memory for a message: "this machine's 23.5 GiB", or "the 24.0 GiB that cgroup
// /slurm/job_7 allows".
std::string usable_memory_text();

// The tightest memory limit of a cgroup and its ancestors, from the text of /proc/self/cgroup
// and the cgroup file system's root (cgroup v2's memory.max, v1's memory.limit_in_bytes): the
// limit and the cgroup that sets it, or nothing when none is set.
struct CgroupLimit {
  std::uint64_t bytes = 0;
  std::string cgroup;
};
std::optional<CgroupLimit> cgroup_memory_limit(std::string_view proc_self_cgroup,
                                               const std::filesystem::path& cgroup_root);

}  // namespace csrun::storage

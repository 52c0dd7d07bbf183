#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "plan.hpp"

namespace csrun::compiler {

// Compiled plans kept on disk, one directory per key (the traced graph's fingerprint and a hash
// of every setting that shapes the plan), holding plan.bin and the compile report beside it.
class PlanCache {
 public:
  explicit PlanCache(std::filesystem::path root) : root_(std::move(root)) {}

  // "<fingerprint>-<8 hex digits of the settings, csrun version and plan format>".
  static std::string key(const std::string& fingerprint, const std::string& settings);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path directory(const std::string& key) const { return root_ / key; }
  std::filesystem::path plan_path(const std::string& key) const {
    return directory(key) / "plan.bin";
  }

  // The cached plan, or nothing when there is none. A cached file that cannot be read (another
  // format version, corrupt) also gives nothing, with the reason in `problem`.
  std::optional<Plan> load(const std::string& key, std::string& problem) const;
  // Writes the plan (atomically, creating directories); returns its path.
  std::filesystem::path store(const std::string& key, const Plan& plan) const;

 private:
  std::filesystem::path root_;
};

}  // namespace csrun::compiler

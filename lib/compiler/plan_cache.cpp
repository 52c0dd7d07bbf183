#include "plan_cache.hpp"

#include <cstdio>

#include "plan_format.hpp"
#include "storage/directories.hpp"

namespace csrun::compiler {

std::string PlanCache::key(const std::string& fingerprint, const std::string& settings) {
  std::string text = settings + "\nplan format " + std::to_string(kPlanFormatVersion);
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 16777619u;
  }
  char digits[9];
  std::snprintf(digits, sizeof digits, "%08x", hash);
  return fingerprint + "-" + digits;
}

std::optional<Plan> PlanCache::load(const std::string& key, std::string& problem) const {
  std::filesystem::path path = plan_path(key);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  try {
    return load_plan(path);
  } catch (const PlanFormatError& failure) {
    problem = failure.what();
    return std::nullopt;
  }
}

std::filesystem::path PlanCache::store(const std::string& key, const Plan& plan) const {
  storage::make_directories(directory(key));
  std::filesystem::path path = plan_path(key);
  save_plan(plan, path);
  return path;
}

}  // namespace csrun::compiler

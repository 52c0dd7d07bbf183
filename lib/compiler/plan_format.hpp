#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "plan.hpp"

namespace csrun::compiler {

// A plan file that cannot be read: not a plan, another format version, truncated or corrupt.
// The message names the file and what is wrong.
class PlanFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The plan as bytes: a header (magic, format version, payload size, checksum) and the payload.
std::string encode_plan(const Plan& plan);
// A payload behind the header this csrun writes: what decode_plan checks before the payload.
std::string with_plan_header(std::string_view payload);
// Reads bytes made by encode_plan; `origin` names them in errors.
Plan decode_plan(const std::string& bytes, const std::string& origin);

void save_plan(const Plan& plan, const std::filesystem::path& path);  // atomically
Plan load_plan(const std::filesystem::path& path);

}  // namespace csrun::compiler

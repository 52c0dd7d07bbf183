#pragma once

#include <string_view>

#include "node.hpp"

namespace csrun::config {

// Types an unquoted YAML scalar the way PyYAML's safe loader (YAML 1.1), the Model Zoo's
// loader, does: yes/no/on/off are booleans, 010 is octal, 1e-5 is a string (PyYAML wants a
// dot and a signed exponent) and so on. The returned node carries `mark` and `path`.
Node resolve_plain_scalar(std::string_view text, SourceMark mark, std::string path);

}  // namespace csrun::config

#pragma once

// Whether the process that left a file behind (its pid in the file's name) still runs, so that a
// new run removes only what dead processes left.

#include <optional>
#include <string_view>

namespace csrun::storage {

// The pid written as `text` (decimal digits only, at most 9), or nothing.
std::optional<int> parse_pid(std::string_view text);

// Whether process `pid` of this machine runs (this process included; another user's counts too).
bool process_alive(int pid);

}  // namespace csrun::storage

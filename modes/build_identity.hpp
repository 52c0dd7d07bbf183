#pragma once

#include <string>

namespace csrun::modes {

// The GNU build ID the linker gave the running executable (hex), or "" when it has none. It
// changes with every change to the code linked in, so a plan cached by one build of csrun is not
// taken for another's, even at the same version number.
const std::string& executable_build_id();

}  // namespace csrun::modes

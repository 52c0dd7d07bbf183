#pragma once

#include <cstdint>
#include <string>

namespace csrun::wafer {

// A size in bytes as people read it, in decimal units: "512 bytes", "3.4 MB", "33.59 GB".
std::string byte_size(double bytes);

}  // namespace csrun::wafer

#include "byte_size.hpp"

#include <cstdio>

namespace csrun::wafer {

std::string byte_size(double bytes) {
  char text[48];
  if (bytes >= 1e12) {
    std::snprintf(text, sizeof text, "%.2f TB", bytes / 1e12);
  } else if (bytes >= 1e9) {
    std::snprintf(text, sizeof text, "%.2f GB", bytes / 1e9);
  } else if (bytes >= 1e6) {
    std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
  } else if (bytes >= 1e3) {
    std::snprintf(text, sizeof text, "%.1f KB", bytes / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f bytes", bytes);
  }
  return text;
}

}  // namespace csrun::wafer

#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace csrun::test {

// One scalar summary of a TensorBoard event file.
struct ScalarEvent {
  std::string tag;
  std::int64_t step = 0;
  float value = 0.0f;
};

// The scalar summaries of a TFRecord event file, in file order. Throws std::runtime_error when
// the framing or a record's protocol buffer is malformed.
std::vector<ScalarEvent> read_scalar_events(const std::string& path);

// The values of `tag`, by step order of the file.
std::vector<double> scalar_values(const std::vector<ScalarEvent>& events, const std::string& tag);

}  // namespace csrun::test

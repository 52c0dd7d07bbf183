#include "dataset_reading.hpp"

#include <algorithm>
#include <stdexcept>

#include "config/yaml_reader.hpp"
#include "data/dataloader.hpp"

namespace csrun::fuzz {

namespace {

// A dataset that announces more than this is read by csrun as it says (or refused when it
// exceeds the machine), which is right but too slow for a fuzzer: such inputs stop at the check.
constexpr std::int64_t kLargestRead = std::int64_t{64} << 20;

std::int64_t sample_bytes(const std::vector<data::SampleField>& fields) {
  std::int64_t bytes = 0;
  for (const data::SampleField& field : fields)
    bytes += field.elements * 4;
  return bytes;
}

}  // namespace

void check_and_read(const std::string& loader_yaml, const std::vector<data::SampleField>& fields) {
  config::Diagnostics diagnostics;
  config::Node loader = config::read_yaml_text(loader_yaml, "fuzz", diagnostics);
  data::DataloaderContext context{data::LoaderRole::train, 1, false, {}};
  std::optional<data::DataloaderSpec> spec = data::check_dataloader(loader, context, diagnostics);
  if (!spec || spec->samples.value_or(0) > kLargestRead / sample_bytes(fields)) return;
  try {
    std::unique_ptr<data::Dataset> dataset = data::open_dataset(*spec, fields, 1);
    data::BatchData batch(fields, 1);
    std::int64_t samples = std::min<std::int64_t>(dataset->size(), 64);
    for (std::int64_t index = 0; index < samples; ++index)
      dataset->read(index, index % 2, 0, batch);
  } catch (const std::runtime_error&) {
  }
}

}  // namespace csrun::fuzz

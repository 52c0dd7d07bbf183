#pragma once

#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace csrun::fuzz {

// Checks a dataloader section (YAML) as validate does, then opens its dataset and reads its
// samples as a data worker does. The documented outcomes are diagnostics and std::runtime_error
// naming the file; anything else escapes to the fuzzer as a finding.
void check_and_read(const std::string& loader_yaml, const std::vector<data::SampleField>& fields);

}  // namespace csrun::fuzz

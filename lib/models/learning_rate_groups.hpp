#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/node.hpp"
#include "nn/training_step.hpp"

namespace csrun::models {

// A group of parameters whose learning rate takes one factor, as the Model Zoo's models define
// them for muP (decoder_attention, decoder_input_ffn, ...): the parameters whose full names match
// one of `patterns` (fnmatch globs: *, ?, [...] and [!...]; * crosses dots).
struct LearningRateGroup {
  std::string name;
  std::vector<std::string> patterns;
  double scale = 1.0;
};

bool glob_match(std::string_view pattern, std::string_view text);

// Each parameter's learning-rate factor: its group's scale, where the optimizer's
// adjust_learning_rate ({group: scale}, the Model Zoo's override) gives a group another. Throws
// std::invalid_argument naming the problem for a group the model does not define, or a parameter
// two groups of different scales claim.
nn::LearningRateScales learning_rate_scales(const std::vector<LearningRateGroup>& groups,
                                            const config::Node* adjustments,
                                            const std::vector<std::string>& parameter_names);

}  // namespace csrun::models

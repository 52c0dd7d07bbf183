#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "config/node.hpp"
#include "graph/graph.hpp"

namespace csrun::nn {

// The initial values of a variable: a pure function of its initializer, shape, the run's seed
// and the variable's name, so a run starts from the same weights on every machine and whatever
// the order variables are created in. Linear weights are [out, in] as in PyTorch, which decides
// fan-in and fan-out. Each element depends on its index alone, so a large variable can be
// filled in parts on several threads: construction checks the initializer (throws
// std::invalid_argument for an unknown one), fill() writes elements [first, first + out.size()).
class InitialValues {
 public:
  InitialValues(const graph::Initializer& init, const graph::Shape& shape, std::uint64_t seed,
                std::string_view name);
  void fill(std::span<float> out, std::int64_t first) const;

 private:
  std::optional<double> constant_;
  std::function<void(std::span<float>, std::int64_t)> fill_;
};

// Throws std::invalid_argument when the initializer cannot fill a variable of this shape (eye
// fills only 2-D weights), naming the variable.
void check_initializer_shape(const graph::Initializer& init, const graph::Shape& shape,
                             std::string_view name);

// All of them at once.
std::vector<float> initial_values(const graph::Initializer& init, const graph::Shape& shape,
                                  std::uint64_t seed, std::string_view name);

// An initializer from a model's params: a name ('zeros') or a mapping ({name: truncated_normal,
// mean, std, a, b}), with the Model Zoo's defaults (normal and truncated_normal std 0.05, uniform
// in +-0.05, kaiming's gain from its nonlinearity, variance_scaling's scale 1, fan_in,
// truncated_normal); `fallback` when the params give none (null).
graph::Initializer initializer_from(const config::Node* spec, graph::Initializer fallback);

graph::Initializer zeros_initializer();
graph::Initializer ones_initializer();
graph::Initializer normal_initializer(double std, double mean = 0.0);
// Centred, truncated at two standard deviations (the Model Zoo's default for BERT).
graph::Initializer truncated_normal_initializer(double std);
// PyTorch's default for a Linear or Conv weight and its bias: uniform in +-1/sqrt(fan_in), fan_in
// of the weight (its dim 1 times the kernel's size).
graph::Initializer torch_default_initializer(double fan_in);

}  // namespace csrun::nn

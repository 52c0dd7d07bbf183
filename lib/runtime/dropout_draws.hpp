#pragma once

// Dropout's draws at one step, for the kernels that apply it: the dropout node's own and a
// softmax's that drops its rows out as it rounds them (compiler::HostStep::dropout). Internal to
// lib/runtime; compiled into each kernel set, whose instructions vectorize the draws.

#include <bit>
#include <cstdint>

#include "graph/counter_rng.hpp"
#include "graph/graph.hpp"
#include "tensor_ref.hpp"

namespace csrun::runtime {

struct DropoutDraws {
  std::uint64_t step_key = 0;
  std::uint64_t threshold = 0;
  double scale = 1.0;

  // The draws of a dropout at the step its step counter holds.
  static DropoutDraws of(const DropoutRef& dropout) {
    const graph::Attributes& attrs = dropout.node->attrs;
    auto at = static_cast<std::int64_t>(load(dropout.step, 0));
    return {graph::dropout_step_key(attrs.seed, attrs.salt, at),
            graph::dropout_keep_threshold(attrs.rate), 1.0 / (1.0 - attrs.rate)};
  }

  // `count` f32 values dropped out, the first of them element `first` of the dropout's value:
  // the kept ones scaled in double and rounded once, as the generic path computes them, in a loop
  // of inline arithmetic alone.
  void apply(const float* x, float* out, std::int64_t count, std::int64_t first) const {
    for (std::int64_t i = 0; i < count; ++i)
      out[i] = kept(x[i], keeps(first + i));
  }

  // The same for two values with these draws (attention dropout's probabilities and its upstream
  // gradient), each element's draw made once for both.
  void apply_to_both(const float* x, float* out, const float* y, float* y_out, std::int64_t count,
                     std::int64_t first) const {
    for (std::int64_t i = 0; i < count; ++i) {
      std::uint32_t keep = keeps(first + i);
      out[i] = kept(x[i], keep);
      y_out[i] = kept(y[i], keep);
    }
  }

  friend bool operator==(const DropoutDraws&, const DropoutDraws&) = default;

 private:
  // All ones where the draw of element `index` keeps it, else zero.
  std::uint32_t keeps(std::int64_t index) const {
    return 0u - static_cast<std::uint32_t>(graph::dropout_keeps_bits(step_key, index, threshold));
  }

  float kept(float value, std::uint32_t keep) const {
    auto scaled =
        std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<double>(value) * scale));
    return std::bit_cast<float>(scaled & keep);  // a dropped element is +0, whatever it was
  }
};

}  // namespace csrun::runtime

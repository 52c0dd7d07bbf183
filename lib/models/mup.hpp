#pragma once

// muP (Model Zoo 2.3 on), shared by the networks that implement it: the widths relative to the
// base model whose hyper-parameters carry over, and the factors they put on attention scores and
// output logits.

#include <cstdint>
#include <string>

#include "config/diagnostics.hpp"
#include "model_params.hpp"

namespace csrun::models {

struct Mup {
  bool on = false;
  double width = 1.0;   // hidden_size / mup_base_hidden_size
  double filter = 1.0;  // filter_size / mup_base_filter_size
};

// Off without mup_base_hidden_size (check_mup wants both bases or neither).
Mup mup_of(const ModelParams& p);

// The bases come in pairs; the logit keys do nothing without them (a warning).
void check_mup(const ModelParams& params, config::Diagnostics& diagnostics);

// The attention scores' factor: 1/sqrt(head) for scaled_dot_product, 1/head with muP's
// scale_qk_dot_by_d (on by default under muP), times attention_logits_alpha.
double attention_score_scale(const ModelParams& p, const Mup& mup, std::int64_t head);

// What multiplies a pre-training head's logits under muP: output_logits_alpha over the width (its
// square root without scale_output_logits_by_d); 1 without muP.
double mup_logits_scale(const ModelParams& p, const Mup& mup);

// For a builder without muP: every muP key refused unless it is off.
void refuse_mup(const ModelParams& params, const std::string& model);

}  // namespace csrun::models

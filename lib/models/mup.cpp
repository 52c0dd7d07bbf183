#include "mup.hpp"

#include <cmath>

#include "model_build.hpp"
#include "model_definitions.hpp"

namespace csrun::models {

Mup mup_of(const ModelParams& p) {
  if (!p.has("mup_base_hidden_size")) return {};
  return {true, static_cast<double>(p.integer("hidden_size")) / p.number("mup_base_hidden_size"),
          static_cast<double>(p.integer("filter_size")) / p.number("mup_base_filter_size")};
}

void check_mup(const ModelParams& params, config::Diagnostics& diagnostics) {
  bool hidden = params.has("mup_base_hidden_size");
  bool filter = params.has("mup_base_filter_size");
  if (hidden != filter) {
    report_at(params, hidden ? "mup_base_hidden_size" : "mup_base_filter_size",
              "muP needs both mup_base_hidden_size and mup_base_filter_size", diagnostics);
  }
  for (const char* key : {"output_logits_alpha", "scale_output_logits_by_d"}) {
    if (!hidden && params.has(key)) {
      warn_at(params, key,
              std::string(key) + " has no effect without mup_base_hidden_size (muP is off)",
              diagnostics);
    }
  }
}

double attention_score_scale(const ModelParams& p, const Mup& mup, std::int64_t head) {
  double alpha = p.has("attention_logits_alpha") ? p.number("attention_logits_alpha") : 1.0;
  if (p.text("attention_type") != "scaled_dot_product") return alpha;
  bool by_head = p.has("scale_qk_dot_by_d") ? p.flag("scale_qk_dot_by_d") : mup.on;
  auto d = static_cast<double>(head);
  return alpha / (by_head ? d : std::sqrt(d));
}

double mup_logits_scale(const ModelParams& p, const Mup& mup) {
  if (!mup.on) return 1.0;
  double alpha = p.has("output_logits_alpha") ? p.number("output_logits_alpha") : 1.0;
  if (alpha == 0.0) alpha = 1.0;
  bool by_width = !p.has("scale_output_logits_by_d") || p.flag("scale_output_logits_by_d");
  return alpha / (by_width ? mup.width : std::sqrt(mup.width));
}

void refuse_mup(const ModelParams& params, const std::string& model) {
  refuse_if_set(params, model,
                {"output_logits_alpha", "mup_base_hidden_size", "mup_base_filter_size",
                 "attention_logits_alpha"});
  refuse_unless(params, model, "embeddings_scale",
                !params.has("embeddings_scale") || params.number("embeddings_scale") == 1.0, "1.0");
  refuse_unless(params, model, "scale_qk_dot_by_d",
                !params.has("scale_qk_dot_by_d") || !params.flag("scale_qk_dot_by_d"), "false");
}

}  // namespace csrun::models

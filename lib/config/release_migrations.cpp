#include "release_migrations.hpp"

#include <algorithm>
#include <array>

namespace csrun::config {

namespace {

constexpr std::array<const char*, 4> kModelPrecisionKeys = {"mixed_precision", "fp16_type",
                                                            "use_bfloat16", "precision_opt_level"};

void set_use_bfloat16(const Node::Entry& entry, Node& precision, Diagnostics& diagnostics) {
  if (!entry.value.is_bool()) {
    diagnostics.error(entry.value.mark(), entry.value.path(),
                      "expected a boolean (true or false); found " + entry.value.describe());
    return;
  }
  if (!entry.value.as_bool()) return;
  if (const Node* other = precision.find("fp16_type");
      other && other->is_string() && other->as_string() != "bfloat16") {
    diagnostics.error(entry.key_mark, entry.value.path(),
                      "use_bfloat16: true contradicts fp16_type '" + other->as_string() +
                          "'; keep only fp16_type");
    return;
  }
  precision.set("fp16_type", Node::make_string("bfloat16", entry.value.mark(), entry.value.path()),
                entry.key_mark);
}

}  // namespace

void move_model_precision_keys(Node& model, Node& precision, const std::string& release_note,
                               Diagnostics& diagnostics) {
  for (const char* key : kModelPrecisionKeys) {
    const Node::Entry* found = model.find_entry(key);
    if (!found) continue;
    Node::Entry entry = *found;
    model.take(key);
    if (!release_note.empty()) {
      diagnostics.warning(entry.key_mark, entry.value.path(),
                          entry.key + " in the model section is " + release_note);
    }
    if (entry.key == "mixed_precision") {
      precision.set("enabled", entry.value, entry.key_mark);
    } else if (entry.key == "use_bfloat16") {
      set_use_bfloat16(entry, precision, diagnostics);
    } else {
      precision.set(entry.key, entry.value, entry.key_mark);
    }
  }
}

void migrate_model_keys(Node& model, Diagnostics& diagnostics) {
  const Node::Entry* found = model.find_entry("use_rms_norm");
  if (!found) return;
  Node::Entry entry = *found;
  model.take("use_rms_norm");
  if (!entry.value.is_bool()) {
    diagnostics.error(entry.value.mark(), entry.value.path(),
                      "expected a boolean (true or false); found " + entry.value.describe());
    return;
  }
  diagnostics.warning(entry.key_mark, entry.value.path(),
                      "use_rms_norm is a Model Zoo 1.9 key; later releases write norm_type: " +
                          std::string(entry.value.as_bool() ? "rmsnorm" : "layernorm") +
                          ", which csrun reads it as");
  if (model.contains("norm_type")) return;
  model.set("norm_type",
            Node::make_string(entry.value.as_bool() ? "rmsnorm" : "layernorm", entry.value.mark(),
                              join_path(model.path(), "norm_type")),
            entry.key_mark);
}

void migrate_trainer_tree(Node& trainer, Diagnostics& diagnostics) {
  Node* init = trainer.find("init");
  Node* model = init && init->is_map() ? init->find("model") : nullptr;
  if (!model || !model->is_map()) return;
  migrate_model_keys(*model, diagnostics);
  bool has_precision_key = std::any_of(kModelPrecisionKeys.begin(), kModelPrecisionKeys.end(),
                                       [&](const char* key) { return model->contains(key); });
  if (!has_precision_key) return;
  // Adding init.precision may move init's entries: find the model again after it.
  Node& precision =
      init->ensure_map("precision", model->mark(), join_path(init->path(), "precision"));
  model = init->find("model");
  move_model_precision_keys(*model, precision,
                            "a Model Zoo 2.4 spelling: later releases read it from "
                            "trainer.init.precision, where csrun moves it",
                            diagnostics);
}

}  // namespace csrun::config

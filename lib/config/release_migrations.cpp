#include "release_migrations.hpp"

#include <algorithm>
#include <array>
#include <utility>

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

namespace {

// Boolean model switches that 2.0 replaced by norm_type.
struct NormSwitch {
  const char* key;
  const char* release;
  const char* when_true;
  const char* when_false;
};

constexpr NormSwitch kNormSwitches[] = {
    {"use_rms_norm", "1.9", "rmsnorm", "layernorm"},
    {"use_t5_layer_norm", "1.x", "rmsnorm", "layernorm"},
};

void migrate_norm_switch(Node& model, const NormSwitch& norm, Diagnostics& diagnostics) {
  const Node::Entry* found = model.find_entry(norm.key);
  if (!found) return;
  Node::Entry entry = *found;
  model.take(norm.key);
  if (!entry.value.is_bool()) {
    diagnostics.error(entry.value.mark(), entry.value.path(),
                      "expected a boolean (true or false); found " + entry.value.describe());
    return;
  }
  const char* type = entry.value.as_bool() ? norm.when_true : norm.when_false;
  if (model.contains("norm_type")) {
    diagnostics.warning(entry.key_mark, entry.value.path(),
                        std::string(norm.key) + " is a Model Zoo " + norm.release +
                            " key that 2.0 replaced by norm_type, which this model sets too "
                            "and wins");
    return;
  }
  diagnostics.warning(entry.key_mark, entry.value.path(),
                      std::string(norm.key) + " is a Model Zoo " + norm.release +
                          " key; later releases write norm_type: " + type +
                          ", which csrun reads it as");
  model.set("norm_type",
            Node::make_string(type, entry.value.mark(), join_path(model.path(), "norm_type")),
            entry.key_mark);
}

}  // namespace

void migrate_model_keys(Node& model, Diagnostics& diagnostics) {
  for (const NormSwitch& norm : kNormSwitches)
    migrate_norm_switch(model, norm, diagnostics);
}

void derive_seq2seq_loss_weights(Node& trainer, Diagnostics& diagnostics) {
  Node* init = trainer.find("init");
  const Node* model = init && init->is_map() ? init->find("model") : nullptr;
  const Node* scaling = model && model->is_map() ? model->find("mlm_loss_scaling") : nullptr;
  Node* fit = trainer.find("fit");
  Node* loader = fit && fit->is_map() ? fit->find("train_dataloader") : nullptr;
  if (!scaling || !scaling->is_string() || !loader || !loader->is_map()) return;
  const Node* processor = loader->find("data_processor");
  std::string name = processor && processor->is_string() ? processor->as_string() : "";
  if (name != "T5DynamicDataProcessor" && name != "TransformerDynamicDataProcessor") return;
  bool weighted = scaling->as_string() == "precomputed_num_masked";
  const Node::Entry* written = loader->find_entry("dynamic_loss_weight");
  if (written && written->value.is_bool() && written->value.as_bool() == weighted) return;
  if (written) {
    diagnostics.warning(written->key_mark, written->value.path(),
                        "Model Zoo 1.9 to 2.4 set dynamic_loss_weight from model.mlm_loss_scaling "
                        "('" +
                            scaling->as_string() +
                            "'), whatever the file wrote; csrun sets it to " +
                            (weighted ? "true" : "false"));
  }
  loader->set(
      "dynamic_loss_weight",
      Node::make_bool(weighted, scaling->mark(), join_path(loader->path(), "dynamic_loss_weight")),
      written ? written->key_mark : scaling->mark());
}

namespace {

bool names_device(const Node& init, std::string_view device) {
  const Node* named = init.find("device");
  if (!named || named->is_null()) {
    const Node* backend = init.find("backend");
    named = backend && backend->is_map() ? backend->find("backend_type") : nullptr;
  }
  return named && named->is_string() && named->as_string() == device;
}

bool scales_loss_dynamically(const Node& precision) {
  const Node* factor = precision.is_map() ? precision.find("loss_scaling_factor") : nullptr;
  return factor && factor->is_string() && factor->as_string() == "dynamic";
}

}  // namespace

namespace {

// Whether the trainer leaves the half type to its release's default.
bool leaves_half_type(const Node& init) {
  const Node* precision = init.find("precision");
  if (!precision || precision->is_null()) return true;
  if (!precision->is_map()) return false;  // an error of its own
  const Node* type = precision->find("fp16_type");
  if (type && !type->is_null()) return false;
  const Node* enabled = precision->find("enabled");
  // Only CSX turns a disabled mixed precision on.
  return !(enabled && enabled->is_bool() && !enabled->as_bool() && names_device(init, "GPU"));
}

// Where the file switches mixed precision on (a legacy file: model.mixed_precision), else its
// precision section, else the trainer.
std::pair<SourceMark, std::string> precision_place(const Node& init) {
  const Node* precision = init.find("precision");
  if (!precision || !precision->is_map()) return {init.mark(), join_path(init.path(), "precision")};
  if (const Node* enabled = precision->find("enabled")) return {enabled->mark(), enabled->path()};
  return {precision->mark(), join_path(init.path(), "precision")};
}

}  // namespace

void default_half_type(Node& trainer, ReleaseRange releases, Diagnostics& diagnostics) {
  Node* init = trainer.is_map() ? trainer.find("init") : nullptr;
  if (!init || !init->is_map() || names_device(*init, "CPU") || !leaves_half_type(*init)) return;
  // "2.4 and later" is a trainer file without 2.4's model-section precision keys, which every
  // trainer file 2.4 shipped has: a 2.6 or later one.
  if (releases.first >= Release::r2_4 && releases.last >= Release::r2_6) return;
  auto [mark, path] = precision_place(*init);
  if (releases.last >= Release::r2_6) {
    const Node* precision = init->find("precision");
    bool dynamic = precision && scales_loss_dynamically(*precision);
    std::string text =
        "no half type is named, and this file's keys point to Model Zoo " + releases.describe() +
        ": 2.4 and earlier ran float16 then, 2.6 and later bfloat16, which csrun takes" +
        (dynamic ? " (and so drops the dynamic loss scaling)" : "") +
        "; set fp16_type (float16 for a run as 2.4 and earlier made it) to choose";
    if (dynamic) {
      diagnostics.warning(mark, path, text);
    } else {
      diagnostics.note(mark, path, text);
    }
    return;
  }
  std::string section = join_path(init->path(), "precision");
  Node& precision = init->ensure_map("precision", mark, section);
  precision.set("fp16_type", Node::make_string("float16", mark, join_path(section, "fp16_type")),
                mark);
  diagnostics.note(mark, path,
                   "no half type is named: Model Zoo " + releases.describe() +
                       " (which this file's keys point to) ran float16 then, 2.6 and later "
                       "bfloat16; csrun runs float16 as the file's release did (fp16_type "
                       "chooses)");
}

void full_precision_where_unset(Node& trainer, ReleaseRange releases, Diagnostics& diagnostics) {
  if (releases.last > Release::r2_2) return;
  Node* init = trainer.is_map() ? trainer.find("init") : nullptr;
  if (!init || !init->is_map()) return;
  const char* device = names_device(*init, "CPU") ? "CPU" : names_device(*init, "GPU") ? "GPU" : "";
  if (*device == '\0') return;
  const Node* precision = init->find("precision");
  if (precision && !precision->is_null() &&
      (!precision->is_map() || precision->contains("enabled")))
    return;
  const Node* model = init->find("model");
  SourceMark mark = model ? model->mark() : init->mark();
  std::string path = model ? join_path(model->path(), "mixed_precision") : init->path();
  std::string section = join_path(init->path(), "precision");
  init->ensure_map("precision", mark, section)
      .set("enabled", Node::make_bool(false, mark, join_path(section, "enabled")), mark);
  diagnostics.note(mark, path,
                   std::string("not set: Model Zoo ") + releases.describe() +
                       " (which this file's keys point to) trained in float32 on " + device +
                       " without it, and so does csrun (true for mixed precision)");
}

void scale_gpt_loss_by_batch(Node& trainer, ReleaseRange releases, Diagnostics& diagnostics) {
  if (releases.last > Release::r1_6) return;
  Node* init = trainer.is_map() ? trainer.find("init") : nullptr;
  Node* model = init && init->is_map() ? init->find("model") : nullptr;
  const Node* fit = trainer.find("fit");
  const Node* loader = fit && fit->is_map() ? fit->find("train_dataloader") : nullptr;
  if (!model || !model->is_map() || !loader || !loader->is_map()) return;
  if (loader->text_or("data_processor", "") != "GptHDF5DataProcessor") return;
  const Node::Entry* weight = model->find_entry("loss_weight");
  if (!weight || !weight->value.is_number() || weight->value.as_number() == 1.0 ||
      model->contains("loss_scaling"))
    return;
  SourceMark mark = weight->key_mark;
  std::string path = join_path(model->path(), "loss_scaling");
  diagnostics.note(mark, path,
                   "Model Zoo 1.6's GPT-2 (which this file's keys point to) divided the loss by "
                   "the batch size and weighed it by loss_weight, with no loss_scaling key; csrun "
                   "sets loss_scaling: batch_size");
  model->set("loss_scaling", Node::make_string("batch_size", mark, path), mark);
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
  // The model's precision keys mark a 2.4 file.
  derive_seq2seq_loss_weights(trainer, diagnostics);
}

}  // namespace csrun::config

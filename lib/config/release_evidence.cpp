#include "release_evidence.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace csrun::config {

namespace {

constexpr std::array<Release, 7> kReleases = {Release::r1_6, Release::r1_9, Release::r2_0,
                                              Release::r2_2, Release::r2_4, Release::r2_6,
                                              Release::r2_10};

// Where a key is written: the legacy sections, or their places in the trainer format.
enum class Section { runconfig, optimizer, model };

struct KeyReleases {
  Section section;
  const char* key;
  ReleaseRange releases;
};

constexpr ReleaseRange since(Release first) {
  return {first, Release::r2_10};
}
constexpr ReleaseRange until(Release last) {
  return {Release::r1_6, last};
}
constexpr ReleaseRange between(Release first, Release last) {
  return {first, last};
}

using enum Release;

// The keys that only some releases read, from the Model Zoo's own sources of each release (the
// runconfig schemas of 1.9 to 2.2, the model and processor code of 1.x to 2.2, the config classes
// of 2.3 on). Keys every release reads, and keys of one network only, are not listed.
constexpr KeyReleases kKeyReleases[] = {
    // runconfig: TF Estimator's keys (1.6), the CS-1 era's, then what each release added.
    {Section::runconfig, "cs_ip", until(r1_6)},
    {Section::runconfig, "fabric_config_file", until(r1_6)},
    {Section::runconfig, "keep_checkpoint_every_n_hours", until(r1_6)},
    {Section::runconfig, "save_checkpoints_steps", until(r1_6)},
    {Section::runconfig, "log_step_count_steps", until(r1_6)},
    {Section::runconfig, "tf_random_seed", until(r1_6)},
    {Section::runconfig, "save_summary_steps", until(r1_9)},
    {Section::runconfig, "keep_checkpoint_max", until(r2_0)},
    {Section::runconfig, "save_losses", until(r1_9)},
    {Section::runconfig, "show_debug_metrics", until(r1_9)},
    {Section::runconfig, "multireplica", until(r1_9)},
    {Section::runconfig, "is_pretrained_checkpoint", until(r1_9)},
    {Section::runconfig, "execution_strategy", between(r1_9, r1_9)},
    {Section::runconfig, "use_cs_grad_accum", between(r1_9, r2_0)},
    {Section::runconfig, "use_appliance_data", between(r1_9, r2_0)},
    {Section::runconfig, "autogen_policy", between(r1_9, r2_0)},
    {Section::runconfig, "skip_train_recv_activations", between(r1_9, r2_0)},
    {Section::runconfig, "use_cstorch_optimizer_step", between(r1_9, r2_2)},
    {Section::runconfig, "execute_crd_memory_gi", since(r2_0)},
    {Section::runconfig, "wrk_memory_gi", since(r2_0)},
    {Section::runconfig, "act_memory_gi", since(r2_0)},
    {Section::runconfig, "cmd_memory_gi", since(r2_0)},
    {Section::runconfig, "wgt_memory_gi", since(r2_0)},
    {Section::runconfig, "summary_dir", since(r2_0)},
    {Section::runconfig, "dump_activations", since(r2_0)},
    {Section::runconfig, "retrace_every_iteration", since(r2_0)},
    {Section::runconfig, "load_checkpoint_states", since(r2_0)},
    {Section::runconfig, "disable_strict_checkpoint_loading", since(r2_0)},
    {Section::runconfig, "log_initialization", since(r2_0)},
    {Section::runconfig, "log_input_summaries", since(r2_0)},
    {Section::runconfig, "job_priority", since(r2_2)},
    {Section::runconfig, "wsc_log_level", since(r2_2)},
    {Section::runconfig, "debug_args", since(r2_2)},
    {Section::runconfig, "ini", since(r2_2)},
    {Section::runconfig, "fabric_type_blacklist", since(r2_2)},
    {Section::runconfig, "enable_act_frequency", since(r2_2)},
    {Section::runconfig, "lazy_initialization", since(r2_2)},
    {Section::runconfig, "experimental", since(r2_2)},
    {Section::runconfig, "op_profiler_config", since(r2_2)},
    {Section::runconfig, "chf_memory_gi", since(r2_4)},
    {Section::runconfig, "legacy_event_dirs", since(r2_4)},
    {Section::runconfig, "hf_cache_dir", since(r2_4)},
    // The legacy optimizer section: 2.0 took PyTorch's spellings.
    {Section::optimizer, "weight_decay_rate", until(r1_9)},
    {Section::optimizer, "beta1", until(r1_9)},
    {Section::optimizer, "beta2", until(r1_9)},
    {Section::optimizer, "epsilon", until(r1_9)},
    {Section::optimizer, "use_bias_correction", until(r1_9)},
    {Section::optimizer, "disable_lr_steps_reset", until(r1_9)},
    {Section::optimizer, "log_grads", until(r1_6)},
    {Section::optimizer, "log_hists", until(r1_6)},
    {Section::optimizer, "betas", since(r2_0)},
    // Model keys, whatever the network.
    {Section::model, "use_position_embedding", until(r2_0)},
    {Section::model, "enable_vts", until(r2_0)},
    {Section::model, "use_t5_layer_norm", until(r1_9)},
    {Section::model, "use_rms_norm", between(r1_9, r1_9)},
    {Section::model, "use_bfloat16", between(r1_9, r2_0)},
    {Section::model, "is_mnli_dataset", until(r2_2)},
    {Section::model, "output_logits_scale", between(r1_9, r2_2)},
    {Section::model, "fp16_type", between(r2_2, r2_4)},
    {Section::model, "position_embedding_offset", since(r2_0)},
    {Section::model, "scale_qk_dot_by_layer_idx", since(r2_0)},
    {Section::model, "rope_theta", since(r2_2)},
    {Section::model, "pos_scaling_factor", since(r2_2)},
    {Section::model, "attention_sliding_window_length", since(r2_2)},
    {Section::model, "fold_rope_consts", since(r2_4)},
    {Section::model, "pos_scaling_type", since(r2_4)},
    {Section::model, "pos_scaling_extra_args", since(r2_4)},
    {Section::model, "attention_sink_tokens", since(r2_4)},
    {Section::model, "moe", since(r2_4)},
    {Section::model, "mup_base_hidden_size", since(r2_4)},
    {Section::model, "mup_base_filter_size", since(r2_4)},
    {Section::model, "mup_base_d_model", since(r2_4)},
    {Section::model, "mup_base_d_ff", since(r2_4)},
    {Section::model, "output_logits_alpha", since(r2_4)},
    {Section::model, "attention_logits_alpha", since(r2_4)},
    {Section::model, "embeddings_alpha", since(r2_4)},
    {Section::model, "encoder_attention_logits_alpha", since(r2_4)},
    {Section::model, "decoder_attention_logits_alpha", since(r2_4)},
    {Section::model, "scale_encoder_qk_dot_by_d", since(r2_4)},
    {Section::model, "scale_decoder_qk_dot_by_d", since(r2_4)},
    {Section::model, "scale_output_logits_by_d", since(r2_4)},
    {Section::model, "lr_adjustment_groups", since(r2_4)},
};

// One piece of evidence: a key only some releases read, or the file's layout.
struct Evidence {
  std::string what;
  SourceMark mark;
  std::string path;
  ReleaseRange releases;
  bool layout = false;
};

class EvidenceCollector {
 public:
  void section(const Node* map, Section kind) {
    if (!map || !map->is_map()) return;
    for (const Node::Entry& entry : map->entries()) {
      for (const KeyReleases& key : kKeyReleases) {
        if (key.section != kind || entry.key != key.key) continue;
        found_.push_back({entry.key, entry.key_mark, entry.value.path(), key.releases, false});
      }
    }
  }

  void trainer(const Node& tree) {
    const Node* init = tree.is_map() ? tree.find("init") : nullptr;
    if (!init || !init->is_map()) return;
    const Node* model = init->find("model");
    section(model, Section::model);
    // 2.3 and 2.4's trainer files switched mixed precision in the model section; 2.6 reads it
    // from trainer.init.precision only. (Every legacy file keeps it in the model section.)
    const Node::Entry* mixed =
        model && model->is_map() ? model->find_entry("mixed_precision") : nullptr;
    if (mixed) {
      found_.push_back({"mixed_precision in a trainer's model section", mixed->key_mark,
                        mixed->value.path(), until(r2_4), false});
    }
  }

  // 1.6's GptHDF5DataProcessor required max_sequence_length; 1.9 asks to remove it (the data
  // holds the sequences).
  void gpt_input(const Node* input) {
    if (!input || !input->is_map() ||
        input->text_or("data_processor", "") != "GptHDF5DataProcessor")
      return;
    const Node::Entry* length = input->find_entry("max_sequence_length");
    if (!length) return;
    found_.push_back({"max_sequence_length for GptHDF5DataProcessor", length->key_mark,
                      length->value.path(), until(r1_6), false});
  }

  // Only 1.x read the TensorFlow layout and only 2.3 on the trainer layout; every release reads
  // the legacy layout (2.3 on convert it), so it says nothing.
  void layout(const Node& written, ParamsFormat format, bool tensorflow) {
    if (tensorflow) {
      found_.push_back({"its TensorFlow layout", written.mark(), "", until(r1_6), true});
    } else if (format != ParamsFormat::legacy) {
      found_.push_back({"its trainer layout", written.mark(), "", since(r2_4), true});
    }
  }

  std::vector<Evidence>& found() { return found_; }

 private:
  std::vector<Evidence> found_;
};

void collect(const Node& written, ParamsFormat format, EvidenceCollector& collector) {
  if (format == ParamsFormat::legacy) {
    collector.section(written.find("runconfig"), Section::runconfig);
    collector.section(written.find("optimizer"), Section::optimizer);
    collector.section(written.find("model"), Section::model);
    collector.gpt_input(written.find("train_input"));
    return;
  }
  const Node* trainer = written.find("trainer");
  if (!trainer) return;
  if (!trainer->is_list()) return collector.trainer(*trainer);
  for (const Node& item : trainer->items()) {
    if (const Node* inner = item.is_map() ? item.find("trainer") : nullptr)
      collector.trainer(*inner);
  }
}

// The releases most of the evidence but `left_out` agrees on.
std::vector<Release> likeliest(const std::vector<Evidence>& evidence, const Evidence* left_out) {
  std::array<int, kReleases.size()> votes{};
  for (const Evidence& item : evidence) {
    if (&item == left_out) continue;
    for (std::size_t r = 0; r < kReleases.size(); ++r)
      votes[r] += item.releases.contains(kReleases[r]) ? 1 : 0;
  }
  int most = *std::max_element(votes.begin(), votes.end());
  std::vector<Release> chosen;
  for (std::size_t r = 0; r < kReleases.size(); ++r) {
    if (votes[r] == most) chosen.push_back(kReleases[r]);
  }
  return chosen;
}

std::string supporting(const std::vector<Evidence>& evidence, const Evidence& left_out,
                       Release release) {
  std::string names;
  int listed = 0;
  for (const Evidence& item : evidence) {
    if (&item == &left_out || !item.releases.contains(release) || listed == 3) continue;
    names += (names.empty() ? "" : ", ") + item.what;
    ++listed;
  }
  return names;
}

std::vector<Evidence> evidence_of(const Node& written, ParamsFormat format,
                                  bool tensorflow_layout) {
  if (!written.is_map()) return {};
  EvidenceCollector collector;
  collector.layout(written, format, tensorflow_layout);
  collect(written, format, collector);
  return std::move(collector.found());
}

}  // namespace

std::string release_name(Release release) {
  static const char* const names[] = {"1.6", "1.9", "2.0", "2.2", "2.4", "2.6", "2.10"};
  return names[static_cast<int>(release)];
}

std::string ReleaseRange::describe() const {
  if (first == last) return release_name(first);
  if (last == Release::r2_10) return release_name(first) + " and later";
  if (first == Release::r1_6) return release_name(last) + " and earlier";
  return release_name(first) + " to " + release_name(last);
}

void check_release_consistency(const Node& written, ParamsFormat format, bool tensorflow_layout,
                               Diagnostics& diagnostics) {
  std::vector<Evidence> evidence = evidence_of(written, format, tensorflow_layout);
  for (const Evidence& item : evidence) {
    if (item.layout) continue;
    std::vector<Release> others = likeliest(evidence, &item);
    bool agrees = std::any_of(others.begin(), others.end(),
                              [&](Release release) { return item.releases.contains(release); });
    if (agrees) continue;
    ReleaseRange suggested{others.front(), others.back()};
    diagnostics.warning(item.mark, item.path,
                        item.what + " is a key of Model Zoo " + item.releases.describe() +
                            ", but the rest of this file points to " + suggested.describe() + " (" +
                            supporting(evidence, item, others.front()) +
                            "); check which release the file is for");
  }
}

ReleaseRange likely_releases(const Node& written, ParamsFormat format, bool tensorflow_layout) {
  std::vector<Release> releases =
      likeliest(evidence_of(written, format, tensorflow_layout), nullptr);
  return {releases.front(), releases.back()};
}

}  // namespace csrun::config

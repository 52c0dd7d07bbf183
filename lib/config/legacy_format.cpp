#include "legacy_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>

#include "class_catalog.hpp"
#include "param_types.hpp"
#include "release_migrations.hpp"
#include "schema.hpp"
#include "spelling.hpp"
#include "tensorflow_layout.hpp"
#include "value_type.hpp"

namespace csrun::config {

namespace {

using T = ValueType;

// Where a runconfig key goes in the trainer format.
enum class Route {
  init,             // init.<target>
  backend,          // init.backend.<target>
  cluster,          // init.backend.cluster_config.<target>
  loop,             // init.loop.<target>
  checkpoint,       // init.checkpoint.<target>
  logging,          // init.logging.<target>
  precision,        // init.precision.<target>
  checkpoint_path,  // fit.ckpt_path, validate.ckpt_path, validate_all.ckpt_paths
  global_flag,      // callbacks: GlobalFlags {<target>: value}
  callback,         // callbacks: <target class> {<key>: value}
  tensorboard,      // loggers: TensorBoardLogger {<key>: value}
  check_loss,       // callbacks: CheckLoss, disabled by false
  mode,             // the subcommand decides; ignored
  strategy,         // 1.7's execution_strategy: init.backend.execution_mode
  no_effect,        // a key of earlier releases
  tensorflow,       // a TensorFlow-era spelling of the runconfig key <target>
  grad_accum,       // use_cs_grad_accum: migrated to the dataloaders' micro_batch_size
};

struct RunconfigKey {
  std::string key;
  T type;
  Route route;
  std::string target;  // the trainer key or class; the message for no_effect / removed
};

std::string one_x(const std::string& key) {
  return key +
         " is a Model Zoo 1.x runconfig key; it has no effect (the 2.x runconfig schema "
         "rejects it)";
}

std::string tensorflow_spelling(const std::string& key, const std::string& modern) {
  return key + " is the TensorFlow-era spelling of runconfig." + modern;
}

const std::vector<RunconfigKey>& runconfig_keys() {
  static const std::vector<RunconfigKey> keys = [] {
    T integer = T::integer().or_null();
    T flag = T::boolean();
    T text = T::string();
    T texts = T::list_of(T::string());
    T gigabytes = memory_gibibytes();
    std::vector<RunconfigKey> k = {
        {"mode", T::choice({"train", "eval", "train_and_eval", "eval_all"}), Route::mode, ""},
        {"target_device", text, Route::backend, "backend_type"},
        {"model_dir", text, Route::init, "model_dir"},
        {"seed", integer, Route::init, "seed"},
        {"checkpoint_path", text.or_null(), Route::checkpoint_path, ""},
        {"checkpoint_steps", T::any(), Route::checkpoint, "steps"},
        {"max_checkpoints", positive_integer().or_null(), Route::callback, "KeepNCheckpoints.n"},
        {"save_initial_checkpoint", flag, Route::checkpoint, "save_initial_checkpoint"},
        {"autoload_last_checkpoint", flag, Route::checkpoint, "autoload_last_checkpoint"},
        {"disable_strict_checkpoint_loading", flag, Route::checkpoint,
         "disable_strict_checkpoint_loading"},
        {"load_checkpoint_states", string_or_strings(), Route::callback,
         "LoadCheckpointStates.load_checkpoint_states"},
        {"check_loss_values", flag, Route::check_loss, ""},
        {"log_steps", T::any(), Route::logging, "log_steps"},
        {"logging", text, Route::logging, "log_level"},
        {"wsc_log_level", T::any_of({text, T::mapping()}), Route::logging, "wsc_log_level"},
        {"enable_act_frequency", flag, Route::logging, "enable_act_frequency"},
        {"num_steps", T::any(), Route::loop, "num_steps"},
        {"max_steps", T::any(), Route::loop, "max_steps"},
        {"num_epochs", T::any(), Route::loop, "num_epochs"},
        {"steps_per_epoch", T::any(), Route::loop, "steps_per_epoch"},
        {"eval_steps", T::any(), Route::loop, "eval_steps"},
        {"eval_frequency", T::any(), Route::loop, "eval_frequency"},
        {"compile_only", flag, Route::backend, "compile_only"},
        {"validate_only", flag, Route::backend, "validate_only"},
        {"compile_dir", text, Route::backend, "compile_dir"},
        {"execution_mode", T::choice({"auto", "pipelined", "weight_streaming"}), Route::backend,
         "execution_mode"},
        {"execution_strategy", T::choice({"pipeline", "weight_streaming"}), Route::strategy,
         "execution_mode"},
        {"num_csx", positive_integer(), Route::cluster, "num_csx"},
        {"num_workers_per_csx", non_negative_integer(), Route::cluster, "num_workers_per_csx"},
        {"num_wgt_servers", non_negative_integer(), Route::cluster, "max_wgt_servers"},
        {"num_act_servers", non_negative_integer(), Route::cluster, "max_act_per_csx"},
        {"mount_dirs", texts, Route::cluster, "mount_dirs"},
        {"python_paths", texts, Route::cluster, "python_paths"},
        {"credentials_path", text, Route::cluster, "credentials_path"},
        {"mgmt_address", text, Route::cluster, "mgmt_address"},
        {"mgmt_namespace", text, Route::cluster, "mgmt_namespace"},
        {"job_labels", texts, Route::cluster, "job_labels"},
        {"job_priority", T::choice({"p1", "p2", "p3"}), Route::cluster, "job_priority"},
        {"job_time_sec", positive_integer(), Route::cluster, "job_time_sec"},
        {"cbcore_image", text, Route::cluster, "cbcore_image"},
        {"disable_version_check", flag, Route::cluster, "disable_version_check"},
        {"debug_args_path", text, Route::callback, "DebugArgsPath.path"},
        {"debug_args", T::mapping(), Route::global_flag, "csx.debug.debug_args"},
        {"ini", T::mapping(), Route::global_flag, "csx.debug.ini"},
        {"precision_opt_level", T::integer(0, 2), Route::precision, "precision_opt_level"},
        {"retrace_every_iteration", flag, Route::global_flag, "csx.debug.retrace_every_iteration"},
        {"lazy_initialization", flag, Route::global_flag, "csx.debug.lazy_initialization"},
        {"log_initialization", flag, Route::global_flag, "csx.debug.log_initialization"},
        {"log_input_summaries", flag, Route::callback, "LogInputSummaries"},
        {"transfer_processes", positive_integer(), Route::global_flag,
         "csx.performance.transfer_processes"},
        {"drop_data", flag, Route::global_flag, "csx.debug.drop_data"},
        {"dump_activations", flag, Route::callback, "DumpActivations"},
        {"summary_dir", text, Route::tensorboard, "summary_dir"},
        {"legacy_event_dirs", flag, Route::tensorboard, "legacy_event_dirs"},
        {"hf_cache_dir", text, Route::callback, "HFCacheDir.cache_dir"},
        {"fabric_type_blacklist", texts, Route::global_flag, "csx.debug.fabric_type_blacklist"},
        {"enable_distributed", flag, Route::backend, "enable_distributed"},
        {"main_process_id", non_negative_integer(), Route::backend, "main_process_id"},
        {"dist_addr", text, Route::backend, "dist_addr"},
        {"dist_backend", T::choice({"nccl", "mpi", "gloo"}), Route::backend, "dist_backend"},
        {"init_method", text, Route::backend, "init_method"},
        {"sync_batchnorm", flag, Route::backend, "sync_batchnorm"},
        {"variant", text, Route::no_effect,
         "variant selects a Model Zoo config variant; it has no effect in csrun"},
        {"experimental", T::mapping(), Route::no_effect,
         "experimental (appliance listeners) has no effect in csrun"},
        {"op_profiler_config", T::mapping(), Route::no_effect,
         "op_profiler_config (the appliance op profiler) has no effect in csrun"},
        {"use_cs_grad_accum", flag, Route::grad_accum, ""},
    };
    for (const char* memory :
         {"compile_crd_memory_gi", "execute_crd_memory_gi", "wrk_memory_gi", "act_memory_gi",
          "cmd_memory_gi", "wgt_memory_gi", "chf_memory_gi"}) {
      k.push_back({memory, gigabytes, Route::global_flag, std::string("csx.debug.") + memory});
    }
    for (const char* key :
         {"cs_ip", "multireplica", "num_replicas", "save_losses", "show_debug_metrics",
          "save_stream_size", "enable_summaries", "is_pretrained_checkpoint", "use_appliance_data",
          "autogen_policy", "experimental_api", "service_dir", "fabric_config_file"}) {
      k.push_back({key, T::any(), Route::no_effect, one_x(key)});
    }
    for (const char* key : {"use_cstorch_optimizer_step", "skip_train_recv_activations"}) {
      k.push_back({key, T::any(), Route::no_effect,
                   std::string(key) +
                       " is a Model Zoo 1.9-2.2 runconfig key of the appliance's execution; it "
                       "has no effect"});
    }
    // TF Estimator's RunConfig: summaries and step logging (both log_steps in csrun; the first
    // in the file counts), checkpoints, the graph seed. Each is checked as its modern key.
    for (auto [key, modern] : {std::pair{"save_summary_steps", "log_steps"},
                               {"log_step_count_steps", "log_steps"},
                               {"save_checkpoints_steps", "checkpoint_steps"},
                               {"keep_checkpoint_max", "max_checkpoints"},
                               {"tf_random_seed", "seed"}}) {
      auto target = std::find_if(k.begin(), k.end(),
                                 [&](const RunconfigKey& entry) { return entry.key == modern; });
      // TF keeps every checkpoint at keep_checkpoint_max: 0 (max_checkpoints: null).
      T type = std::string_view(key) == "keep_checkpoint_max" ? non_negative_integer().or_null()
                                                              : target->type;
      k.push_back({key, type, Route::tensorflow, modern});
    }
    k.push_back({"keep_checkpoint_every_n_hours", T::any(), Route::no_effect,
                 "keep_checkpoint_every_n_hours is a TensorFlow-era key; it has no effect "
                 "(csrun keeps checkpoints by count: max_checkpoints)"});
    return k;
  }();
  return keys;
}

const Schema& runconfig_schema() {
  static const Schema schema = [] {
    std::vector<Field> fields;
    for (const RunconfigKey& key : runconfig_keys()) {
      if (key.route == Route::no_effect) {
        fields.push_back(no_effect_field(key.key, key.target));
      } else {
        fields.push_back(optional_field(key.key, key.type));
      }
    }
    return Schema("runconfig", std::move(fields), UnknownKeys::error_jsonschema);
  }();
  return schema;
}

const RunconfigKey* find_runconfig_key(const std::string& key) {
  for (const RunconfigKey& entry : runconfig_keys()) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

const std::set<std::string>& optimizer_precision_keys() {
  static const std::set<std::string> keys = {
      "loss_scaling_factor", "initial_loss_scale", "steps_per_increase", "min_loss_scale",
      "max_loss_scale",      "max_gradient_norm",  "max_gradient_value"};
  return keys;
}

// Legacy LR-schedule keys and their trainer-format names, per schedule. A key that is a
// parameter of the schedule keeps its name (CyclicLR's gamma and base_lr).
std::string rename_scheduler_key(const ClassEntry& scheduler, const std::string& key) {
  if (scheduler.params->find(key)) return key;
  const std::string& name = scheduler.name;
  bool gamma_schedule = name == "StepLR" || name == "MultiStepLR";
  if (key == "steps" || key == "decay_steps") return name == "StepLR" ? "step_size" : "total_iters";
  if (key == "learning_rate" || key == "base_lr" || key == "initial_learning_rate") {
    if (name == "ConstantLR") return "learning_rate";
    if (name == "CyclicLR") return "base_lr";
    return "initial_learning_rate";
  }
  if (key == "gamma") return "decay_rate";
  if (key == "decay_rate" && gamma_schedule) return "gamma";
  if (key == "t_max") return "T_max";
  if (key == "t_0") return "T_0";
  if (key == "t_mult") return "T_mult";
  if (key == "values") return "learning_rates";
  if (key == "boundaries") return "milestones";
  return key;
}

class LegacyConverter {
 public:
  explicit LegacyConverter(Diagnostics& diagnostics) : diagnostics_(diagnostics) {}

  Node convert(const Node& written) {
    std::optional<Node> rearranged;
    if (is_tensorflow_layout(written))
      rearranged = pytorch_layout_of_tensorflow(written, diagnostics_);
    const Node& params = rearranged ? *rearranged : written;
    trainer_ = Node::make_map(params.mark(), "");
    static const std::vector<std::string> sections = {"train_input", "eval_input", "model",
                                                      "optimizer",   "runconfig",  "sparsity",
                                                      "csconfig",    "wandb"};
    for (const Node::Entry& entry : params.entries()) {
      if (std::find(sections.begin(), sections.end(), entry.key) != sections.end()) continue;
      if (entry.key == "description") {
        // TensorFlow-era files (1.6) open with a line saying what they configure.
        diagnostics_.note(entry.key_mark, entry.key,
                          "description is the file's own comment; csrun ignores it");
        continue;
      }
      std::string hint = did_you_mean(entry.key, sections);
      diagnostics_.error(
          entry.key_mark, entry.key,
          "unknown section of a legacy params file" +
              (hint.empty() ? "; legacy sections are " + quoted_list(sections, "and") : hint));
    }
    grad_accum_micro_batch_ = migrate_grad_accum(section(params, "runconfig"));
    convert_inputs(params.find("train_input"), params.find("eval_input"));
    if (const Node* model = section(params, "model")) convert_model(*model);
    if (const Node* optimizer = section(params, "optimizer")) convert_optimizer(*optimizer);
    if (const Node* csconfig = section(params, "csconfig")) convert_csconfig(*csconfig);
    if (const Node* sparsity = params.find("sparsity")) init().set("sparsity", *sparsity);
    if (const Node* wandb = section(params, "wandb"))
      add_class("loggers", "WandbLogger", *wandb) = *wandb;
    if (const Node* runconfig = section(params, "runconfig")) convert_runconfig(*runconfig);
    // Legacy training always has a step count in runconfig; an empty loop makes its absence
    // an error (the trainer format's default of one epoch does not apply). A runconfig that is
    // not a mapping has its own error already.
    const Node* runconfig = params.find("runconfig");
    bool runconfig_misshapen = runconfig && !runconfig->is_null() && !runconfig->is_map();
    if (trainer_.contains("fit") && !runconfig_misshapen) {
      init_section("loop", runconfig && runconfig->is_map()
                               ? *runconfig
                               : Node::make_map(params.mark(), "runconfig"));
    }
    derive_seq2seq_loss_weights(trainer_, diagnostics_);
    return std::move(trainer_);
  }

  Node convert_runconfig_only(const Node& runconfig) {
    trainer_ = Node::make_map(runconfig.mark(), "");
    for (const char* key : {"fit", "validate", "validate_all"}) {
      trainer_.ensure_map(key, runconfig.mark(), runconfig.path());
    }
    convert_runconfig(runconfig);
    return std::move(trainer_);
  }

 private:
  const Node* section(const Node& params, const std::string& key) {
    const Node* node = params.find(key);
    if (!node || node->is_null()) return nullptr;
    if (node->is_map()) return node;
    diagnostics_.error(node->mark(), key, "expected a mapping; found " + node->describe());
    return nullptr;
  }

  Node& init() { return trainer_.ensure_map("init", trainer_.mark(), ""); }

  Node& init_section(const std::string& key, const Node& source) {
    return init().ensure_map(key, source.mark(), source.path());
  }

  // The params of the {name: params} entry of init.<list_key> (callbacks or loggers), appended
  // empty (positioned at `source`) when the class is not listed yet.
  Node& add_class(const std::string& list_key, const std::string& name, const Node& source) {
    Node* list = init().find(list_key);
    if (!list || !list->is_list()) list = &init().set(list_key, Node::make_list(source.mark()));
    for (Node& item : list->items()) {
      if (Node* existing = item.find(name); existing && existing->is_map()) return *existing;
    }
    Node item = Node::make_map(source.mark(), source.path());
    item.set(name, Node::make_map(source.mark(), source.path()));
    list->push_back(std::move(item));
    return *list->items().back().find(name);
  }

  void convert_inputs(const Node* train_input, const Node* eval_input) {
    if (train_input && !train_input->is_null()) {
      // Moving micro_batch_size adds a callback to init: take the loader before touching fit.
      Node loader = move_micro_batch(*train_input, "ScopedTrainFlags");
      trainer_.ensure_map("fit", train_input->mark(), "train_input")
          .set("train_dataloader", loader);
    }
    if (!eval_input || eval_input->is_null()) return;
    Node loader = move_micro_batch(*eval_input, "ScopedValidateFlags");
    if (Node* fit = trainer_.find("fit")) fit->set("val_dataloader", loader);
    trainer_.ensure_map("validate", eval_input->mark(), "eval_input").set("val_dataloader", loader);
    trainer_.ensure_map("validate_all", eval_input->mark(), "eval_input")
        .set("val_dataloaders", loader);
  }

  // Model Zoo 2.0's use_cs_grad_accum, as 2.2's config converter migrates it: true lets the
  // compiler pick the micro-batch (micro_batch_size: auto), false turns splitting off (null).
  // A micro_batch_size the dataloader sets itself wins.
  std::optional<Node> migrate_grad_accum(const Node* runconfig) {
    const Node::Entry* entry = runconfig ? runconfig->find_entry("use_cs_grad_accum") : nullptr;
    if (!entry || !entry->value.is_bool()) return std::nullopt;
    bool accumulate = entry->value.as_bool();
    diagnostics_.warning(entry->key_mark, entry->value.path(),
                         "use_cs_grad_accum is a Model Zoo 2.0 runconfig key that 2.2 and later "
                         "refuse; csrun applies their migration: micro_batch_size: " +
                             std::string(accumulate ? "auto" : "null") +
                             " in train_input and eval_input, unless they set one");
    return accumulate ? Node::make_string("auto", entry->value.mark(), entry->value.path())
                      : Node::make_null(entry->value.mark(), entry->value.path());
  }

  // micro_batch_size moves into a flags callback, as the Model Zoo's conversion does.
  Node move_micro_batch(const Node& input, const std::string& flags_class) {
    Node loader = input;
    if (!loader.is_map()) return loader;
    std::optional<Node> micro = loader.take("micro_batch_size");
    if (!micro) micro = grad_accum_micro_batch_;
    if (micro) {
      add_class("callbacks", flags_class, input)
          .set("csx.performance.micro_batch_size", std::move(*micro), loader.mark());
    }
    return loader;
  }

  void convert_model(const Node& model) {
    Node converted = model;
    if (const Node::Entry* level = model.find_entry("precision_opt_level")) {
      diagnostics_.warning(level->key_mark, level->value.path(),
                           "model.precision_opt_level is deprecated; set "
                           "runconfig.precision_opt_level instead");
    }
    migrate_model_keys(converted, diagnostics_);
    Node precision = Node::make_map(model.mark(), model.path());
    move_model_precision_keys(converted, precision, "", diagnostics_);
    if (!precision.entries().empty()) merge_precision(precision, model);
    init().set("model", std::move(converted), model.mark());
  }

  void merge_precision(const Node& moved, const Node& source) {
    Node& precision = init_section("precision", source);
    for (const Node::Entry& entry : moved.entries())
      precision.set(entry.key, entry.value, entry.key_mark);
  }

  void convert_csconfig(const Node& csconfig) {
    for (const Node::Entry& entry : csconfig.entries()) {
      std::string path = join_path("csconfig", entry.key);
      if (entry.key != "use_cbfloat16") {
        diagnostics_.warning(entry.key_mark, path,
                             entry.key + " is a Model Zoo 1.x csconfig key; it has no effect");
        continue;
      }
      if (!entry.value.is_bool()) {
        diagnostics_.error(entry.value.mark(), path,
                           "expected a boolean (true or false); found " + entry.value.describe());
        continue;
      }
      if (entry.value.as_bool()) {
        init_section("precision", csconfig)
            .set("fp16_type", Node::make_string("cbfloat16", entry.value.mark(), path),
                 entry.key_mark);
      }
    }
  }

  void convert_optimizer(const Node& optimizer) {
    const Node* type = optimizer.find("optimizer_type");
    if (!type) {
      diagnostics_.error(optimizer.mark(), optimizer.path(),
                         "Field required: 'optimizer_type' (the optimizer's class name, for "
                         "example SGD or AdamW)");
      return;
    }
    if (!type->is_string()) {
      diagnostics_.error(type->mark(), type->path(),
                         "expected the name of an optimizer; found " + type->describe());
      return;
    }
    const ClassEntry* entry = optimizer_catalog().find(type->as_string());
    if (!entry) {
      std::vector<std::string> names = optimizer_catalog().names();
      auto suggestion = closest_match(type->as_string(), names);
      diagnostics_.error(type->mark(), type->path(),
                         "unknown optimizer '" + type->as_string() + "'" +
                             (suggestion ? "; did you mean '" + *suggestion + "'?"
                                         : "; known optimizers: " + quoted_list(names, "and")));
      return;
    }
    const std::string& name = entry->name;
    Node kwargs = Node::make_map(optimizer.mark(), optimizer.path());
    for (const Node::Entry& item : optimizer.entries()) {
      convert_optimizer_key(optimizer, item, kwargs);
    }
    merge_betas(optimizer, kwargs);
    Node wrapped = Node::make_map(optimizer.mark(), optimizer.path());
    wrapped.set(name, std::move(kwargs), type->mark());
    init().set("optimizer", std::move(wrapped), optimizer.mark());
  }

  void convert_optimizer_key(const Node& optimizer, const Node::Entry& item, Node& kwargs) {
    const std::string& key = item.key;
    if (key == "optimizer_type" || key == "beta1" || key == "beta2") return;
    if (optimizer_precision_keys().count(key)) {
      init_section("precision", optimizer).set(key, item.value, item.key_mark);
    } else if (key == "learning_rate") {
      const Node* reset = optimizer.find("disable_lr_steps_reset");
      convert_learning_rate(item.value, kwargs, item.key_mark,
                            reset && reset->is_bool() && reset->as_bool());
    } else if (key == "log_summaries") {
      init_section("precision", optimizer).set("log_loss_scale", item.value, item.key_mark);
      if (item.value.is_bool() && item.value.as_bool())
        add_class("callbacks", "ComputeNorm", item.value);
    } else if (key == "grad_accum_steps") {
      init_section("loop", optimizer).set("grad_accum_steps", item.value, item.key_mark);
    } else if (key == "weight_decay_rate") {
      kwargs.set("weight_decay", item.value, item.key_mark);
    } else if (key == "epsilon" || key == "use_bias_correction") {
      std::string modern = key == "epsilon" ? "eps" : "correct_bias";
      diagnostics_.warning(item.key_mark, item.value.path(),
                           key + " is the Model Zoo 1.x spelling of " + modern +
                               " (2.0 renamed it); csrun reads it as " + modern);
      kwargs.set(modern, item.value, item.key_mark);
    } else if (key == "use_nesterov") {
      kwargs.set("nesterov", item.value, item.key_mark);
    } else if (key == "log_grads" || key == "log_hists" || key == "ws_summary") {
      diagnostics_.warning(item.key_mark, item.value.path(),
                           key +
                               " is a Model Zoo 1.x optimizer key (summaries of gradients and "
                               "weights); it has no effect");
    } else if (key == "disable_lr_steps_reset") {
      // Read with the learning rate's list (convert_scheduler_list).
    } else {
      kwargs.set(key, item.value, item.key_mark);
    }
  }

  // 1.x wrote beta1 and beta2; 2.x writes betas: [beta1, beta2].
  void merge_betas(const Node& optimizer, Node& kwargs) {
    const Node::Entry* beta1 = optimizer.find_entry("beta1");
    const Node::Entry* beta2 = optimizer.find_entry("beta2");
    if (!beta1 && !beta2) return;
    if (optimizer.contains("betas")) {
      const Node::Entry* single = beta1 ? beta1 : beta2;
      diagnostics_.error(single->key_mark, single->value.path(),
                         "give either betas or beta1/beta2, not both");
      return;
    }
    const Node::Entry* first = beta1 ? beta1 : beta2;
    Node betas = Node::make_list(first->value.mark(), join_path(optimizer.path(), "betas"));
    betas.push_back(beta1 ? beta1->value : Node::make_number(0.9, first->value.mark()));
    betas.push_back(beta2 ? beta2->value : Node::make_number(0.999, first->value.mark()));
    kwargs.set("betas", std::move(betas), first->key_mark);
  }

  // `on_global_step`: disable_lr_steps_reset, the later schedules of a list run on the global
  // step rather than from their own start.
  void convert_learning_rate(const Node& written, Node& kwargs, const SourceMark& key_mark,
                             bool on_global_step) {
    Node lr = written;
    if (auto number = numeric_string(written, diagnostics_))
      lr = Node::make_number(*number, written.mark(), written.path());
    Node schedulers = Node::make_list(lr.mark(), lr.path());
    if (lr.is_number()) {
      kwargs.set("learning_rate", lr, key_mark);
      Node params = Node::make_map(lr.mark(), lr.path());
      params.set("learning_rate", lr, key_mark);
      Node constant = Node::make_map(lr.mark(), lr.path());
      constant.set("ConstantLR", std::move(params), key_mark);
      schedulers.push_back(std::move(constant));
    } else if (lr.is_map()) {
      if (auto scheduler = convert_scheduler(lr, true)) schedulers.push_back(std::move(*scheduler));
    } else if (lr.is_list() && !lr.items().empty()) {
      if (auto scheduler = convert_scheduler_list(lr, on_global_step))
        schedulers.push_back(std::move(*scheduler));
    } else {
      diagnostics_.error(
          lr.mark(), lr.path(),
          "Learning rate must be a float, a dict, or a list of dicts; found " + lr.describe());
      return;
    }
    init().set("schedulers", std::move(schedulers), key_mark);
  }

  std::optional<Node> convert_scheduler_list(const Node& list, bool on_global_step) {
    Node members = Node::make_list(list.mark(), list.path());
    std::set<std::string> main_schedulers;
    std::int64_t start = 0;  // the global step the schedule starts at
    for (std::size_t i = 0; i < list.items().size(); ++i) {
      const Node& item = list.items()[i];
      if (const Node* main = item.is_map() ? item.find("main_scheduler") : nullptr) {
        main_schedulers.insert(main->render());
      }
      bool final = i + 1 == list.items().size();
      std::optional<Node> scheduler = convert_scheduler(item, final);
      if (!scheduler) continue;
      std::int64_t steps = schedule_steps(*scheduler);
      if (on_global_step && start > 0) scheduler = on_global_step_from(*scheduler, start, final);
      members.push_back(std::move(*scheduler));
      start += steps;
    }
    if (main_schedulers.size() > 1) {
      std::string values;
      for (const std::string& value : main_schedulers)
        values += (values.empty() ? "" : ", ") + value;
      diagnostics_.error(list.mark(), list.path(),
                         "Got conflicting `main_scheduler` values: {" + values +
                             "}. Please make sure to specify the same main scheduler.");
    }
    if (members.items().size() == 1) return members.items().front();
    bool chained = main_schedulers.count("'chained'") > 0;
    Node params = Node::make_map(list.mark(), list.path());
    params.set("schedulers", std::move(members));
    Node wrapped = Node::make_map(list.mark(), list.path());
    wrapped.set(chained ? "ChainedScheduler" : "SequentialLR", std::move(params), list.mark());
    return wrapped;
  }

  static std::int64_t schedule_steps(const Node& scheduler) {
    const Node* steps = scheduler.entries().front().value.find("total_iters");
    return steps && steps->is_int() ? steps->as_int() : 0;
  }

  // disable_lr_steps_reset (1.x: "schedules will overlap rather than occur sequentially"): the
  // schedule that starts at global step `start` computes its rate at the global step. The final
  // one becomes the same curve as a schedule of its own steps, which the trainer format's
  // SequentialLR restarts; one before it would need a decay length other than its span, which
  // the milestones SequentialLR checks do not allow.
  Node on_global_step_from(const Node& scheduler, std::int64_t start, bool final) {
    const Node::Entry& entry = scheduler.entries().front();
    std::optional<Node> continued = final ? continued_from(entry, start) : std::nullopt;
    if (!continued) {
      diagnostics_.warning(entry.key_mark, entry.value.path(),
                           "disable_lr_steps_reset: true runs this " + entry.key +
                               " on the global step, from step " + std::to_string(start) +
                               " of its curve; csrun runs it from its own start (it continues "
                               "only the final LinearLR, PolynomialLR, ExponentialLR or "
                               "ConstantLR of a list)");
      return scheduler;
    }
    diagnostics_.note(
        entry.key_mark, entry.value.path(),
        "disable_lr_steps_reset: true runs this " + entry.key +
            " on the global step: csrun writes it as the rest of that curve, from its step " +
            std::to_string(start) + " on");
    return *continued;
  }

  // The schedule `entry` from `offset` steps in, as a schedule that starts there.
  static std::optional<Node> continued_from(const Node::Entry& entry, std::int64_t offset) {
    const Node& params = entry.value;
    auto number = [&](const char* key, std::optional<double> fallback = std::nullopt) {
      const Node* value = params.find(key);
      return value && value->is_number() ? std::optional(value->as_number()) : fallback;
    };
    Node result = params;
    std::string name = entry.key;
    if (name == "ConstantLR") return wrapped_schedule(entry, name, result);
    const Node* steps = params.find("total_iters");
    if (!steps || !steps->is_int() || steps->as_int() <= 0) return std::nullopt;
    std::int64_t total = steps->as_int();
    std::optional<double> initial = number("initial_learning_rate");
    if (!initial) return std::nullopt;
    if (name == "LinearLR" || name == "PolynomialLR") {
      std::optional<double> end = number("end_learning_rate");
      std::optional<double> power = number("power", 1.0);
      if (!end || !power || params.contains("cycle")) return std::nullopt;
      if (offset >= total) {
        Node constant = Node::make_map(params.mark(), params.path());
        constant.set("learning_rate", Node::make_number(*end, params.mark(), params.path()));
        return wrapped_schedule(entry, "ConstantLR", constant);
      }
      double left = static_cast<double>(total - offset) / static_cast<double>(total);
      result.set("initial_learning_rate",
                 Node::make_number(*end + (*initial - *end) * std::pow(left, *power), params.mark(),
                                   params.path()));
      result.set("total_iters", Node::make_int(total - offset, steps->mark(), steps->path()));
      return wrapped_schedule(entry, name, result);
    }
    if (name != "ExponentialLR") return std::nullopt;
    std::optional<double> rate = number("decay_rate");
    const Node* staircase = params.find("staircase");
    bool stairs = staircase && staircase->is_bool() && staircase->as_bool();
    if (!rate || (stairs && offset % total != 0)) return std::nullopt;
    result.set("initial_learning_rate",
               Node::make_number(*initial * std::pow(*rate, static_cast<double>(offset) /
                                                                static_cast<double>(total)),
                                 params.mark(), params.path()));
    return wrapped_schedule(entry, name, result);
  }

  static Node wrapped_schedule(const Node::Entry& entry, const std::string& name, Node params) {
    Node wrapped = Node::make_map(entry.value.mark(), entry.value.path());
    wrapped.set(name, std::move(params), entry.key_mark);
    return wrapped;
  }

  // TensorFlow-era files wrote `Cosine` with TF's cosine_decay `alpha`, the final rate as a
  // fraction of the initial one: CosineDecay with end_learning_rate = alpha x initial.
  Node migrate_tf_cosine(const Node& legacy) {
    Node migrated = legacy;
    const Node::Entry* name = legacy.find_entry("scheduler");
    diagnostics_.warning(name->key_mark, name->value.path(),
                         "scheduler 'Cosine' is the TensorFlow-era spelling of CosineDecay; "
                         "csrun reads it as CosineDecay, with end_learning_rate = alpha x "
                         "initial_learning_rate");
    migrated.set("scheduler",
                 Node::make_string("CosineDecay", name->value.mark(), name->value.path()));
    // An alpha that cannot be converted stays, so the schedule's check reports it unused.
    const Node* alpha = legacy.find("alpha");
    const Node* initial = legacy.find("initial_learning_rate");
    if (!alpha || !alpha->is_number() || !initial || !initial->is_number()) return migrated;
    migrated.take("alpha");
    migrated.set("end_learning_rate", Node::make_number(alpha->as_number() * initial->as_number(),
                                                        alpha->mark(), alpha->path()));
    return migrated;
  }

  // {scheduler: Linear, initial_learning_rate: ..., steps: ...} -> {LinearLR: {...}}
  std::optional<Node> convert_scheduler(const Node& written, bool final) {
    const Node* written_name = written.is_map() ? written.find("scheduler") : nullptr;
    bool tf_cosine =
        written_name && written_name->is_string() && written_name->as_string() == "Cosine";
    const Node legacy = tf_cosine ? migrate_tf_cosine(written) : written;
    if (!legacy.is_map()) {
      diagnostics_.error(legacy.mark(), legacy.path(),
                         "Learning rate must be a float, a dict, or a list of dicts; found " +
                             legacy.describe() + " in the list");
      return std::nullopt;
    }
    const Node* name = legacy.find("scheduler");
    if (!name || !name->is_string()) {
      diagnostics_.error(name ? name->mark() : legacy.mark(), legacy.path(),
                         "a learning-rate schedule needs 'scheduler' (its name, for example "
                         "Linear or CosineDecay)");
      return std::nullopt;
    }
    const ClassEntry* entry = scheduler_catalog().find(name->as_string());
    if (!entry) {
      std::vector<std::string> names = scheduler_catalog().names();
      std::vector<std::string> short_names;
      for (const std::string& full : names) {
        bool suffixed = full.size() > 2 && full.compare(full.size() - 2, 2, "LR") == 0;
        short_names.push_back(suffixed ? full.substr(0, full.size() - 2) : full);
      }
      diagnostics_.error(name->mark(), name->path(),
                         "Invalid lr_scheduler type. Expected one of " + python_list(names) +
                             ". Got: " + name->as_string() +
                             did_you_mean(name->as_string(), short_names));
      return std::nullopt;
    }
    bool has_steps = legacy.contains("steps") || legacy.contains("decay_steps") ||
                     legacy.contains("total_iters");
    if (!final && !has_steps && entry->name != "ConstantLR") {
      diagnostics_.error(legacy.mark(), legacy.path(),
                         "Non final learning rate schedulers must have either the 'steps' or "
                         "'decay_steps' parameter given.");
      return std::nullopt;
    }
    Node params = Node::make_map(legacy.mark(), legacy.path());
    for (const Node::Entry& item : legacy.entries()) {
      if (item.key == "scheduler" || item.key == "main_scheduler") continue;
      std::string key = rename_scheduler_key(*entry, item.key);
      if (!entry->params->find(key)) {
        diagnostics_.warning(
            item.key_mark, item.value.path(),
            "'" + item.key + "' is not a parameter of " + entry->name + " and has no effect");
        continue;
      }
      if (const Node* earlier = params.find(key); earlier && earlier->same_value(item.value)) {
        continue;
      }
      if (params.contains(key)) {
        diagnostics_.error(
            item.key_mark, item.value.path(),
            "'" + item.key + "' sets " + key + ", which another key of this schedule already sets");
        continue;
      }
      params.set(key, item.value, item.key_mark);
    }
    Node wrapped = Node::make_map(legacy.mark(), legacy.path());
    wrapped.set(entry->name, std::move(params), name->mark());
    return wrapped;
  }

  void convert_runconfig(const Node& runconfig) {
    Node checked = runconfig_schema().check(runconfig, diagnostics_);
    std::set<std::string> spelled;  // modern keys a TensorFlow-era key stood for
    for (const Node::Entry& entry : checked.entries()) {
      const RunconfigKey* key = find_runconfig_key(entry.key);
      if (!key) continue;
      if (key->route == Route::tensorflow) {
        route_tensorflow_key(*key, entry, checked, spelled);
      } else {
        route(*key, entry, runconfig);
      }
    }
  }

  // The modern key wins over its TensorFlow-era spelling, and the first of two spellings over
  // the second.
  void route_tensorflow_key(const RunconfigKey& key, const Node::Entry& entry,
                            const Node& runconfig, std::set<std::string>& spelled) {
    std::string note = tensorflow_spelling(key.key, key.target);
    if (runconfig.contains(key.target)) {
      diagnostics_.warning(entry.key_mark, entry.value.path(),
                           note + "; runconfig." + key.target + " is set too and wins");
      return;
    }
    if (!spelled.insert(key.target).second) {
      diagnostics_.warning(entry.key_mark, entry.value.path(),
                           note + "; an earlier key of this runconfig sets it already");
      return;
    }
    if (key.key == "keep_checkpoint_max" && entry.value.is_int() && entry.value.as_int() == 0) {
      diagnostics_.warning(entry.key_mark, entry.value.path(),
                           note + "; 0 keeps every checkpoint, as max_checkpoints: null does");
      return;
    }
    diagnostics_.warning(entry.key_mark, entry.value.path(),
                         note + "; csrun reads it as " + key.target);
    route(*find_runconfig_key(key.target), entry, runconfig);
  }

  void route(const RunconfigKey& key, const Node::Entry& entry, const Node& runconfig) {
    const Node& value = entry.value;
    switch (key.route) {
      case Route::init:
        init().set(key.target, value, entry.key_mark);
        return;
      case Route::backend:
        init_section("backend", runconfig).set(key.target, value, entry.key_mark);
        return;
      case Route::strategy: {
        std::string mode = value.as_string() == "pipeline" ? "pipelined" : value.as_string();
        init_section("backend", runconfig)
            .set(key.target, Node::make_string(mode, value.mark(), value.path()), entry.key_mark);
        return;
      }
      case Route::cluster:
        init_section("backend", runconfig)
            .ensure_map("cluster_config", runconfig.mark(), runconfig.path())
            .set(key.target, value, entry.key_mark);
        return;
      case Route::loop:
      case Route::checkpoint:
      case Route::logging:
      case Route::precision: {
        static const char* const names[] = {"loop", "checkpoint", "logging", "precision"};
        auto index = static_cast<int>(key.route) - static_cast<int>(Route::loop);
        init_section(names[index], runconfig).set(key.target, value, entry.key_mark);
        return;
      }
      case Route::checkpoint_path:
        route_checkpoint_path(entry);
        return;
      case Route::global_flag:
        add_class("callbacks", "GlobalFlags", runconfig).set(key.target, value, entry.key_mark);
        return;
      case Route::callback:
        route_callback(key, entry, runconfig);
        return;
      case Route::tensorboard:
        add_class("loggers", "TensorBoardLogger", runconfig).set(key.key, value, entry.key_mark);
        return;
      case Route::check_loss:
        // check_loss_values: false turns the default CheckLoss callback off ({CheckLoss: null}).
        if (value.is_bool() && !value.as_bool()) {
          add_class("callbacks", "CheckLoss", runconfig) =
              Node::make_null(value.mark(), value.path());
        }
        return;
      case Route::mode:
        diagnostics_.note(entry.key_mark, value.path(),
                          "runconfig.mode is ignored: the csrun subcommand chooses the mode");
        return;
      case Route::grad_accum:
        if (!grad_accum_micro_batch_) {
          diagnostics_.warning(entry.key_mark, value.path(),
                               "use_cs_grad_accum has no effect here; set micro_batch_size in "
                               "the dataloaders");
        }
        return;
      case Route::no_effect:
      case Route::tensorflow:
        return;
    }
  }

  void route_callback(const RunconfigKey& key, const Node::Entry& entry, const Node& runconfig) {
    std::size_t dot = key.target.find('.');
    std::string name = key.target.substr(0, dot);
    if (dot == std::string::npos) {
      if (entry.value.is_bool() && entry.value.as_bool()) add_class("callbacks", name, runconfig);
      return;
    }
    if (entry.value.is_null()) return;
    add_class("callbacks", name, runconfig)
        .set(key.target.substr(dot + 1), entry.value, entry.key_mark);
  }

  // A null checkpoint_path is the runconfig default (autoload), not a request to start fresh.
  void route_checkpoint_path(const Node::Entry& entry) {
    if (entry.value.is_null()) return;
    if (Node* fit = trainer_.find("fit")) fit->set("ckpt_path", entry.value, entry.key_mark);
    if (Node* validate = trainer_.find("validate")) {
      validate->set("ckpt_path", entry.value, entry.key_mark);
    }
    if (Node* validate_all = trainer_.find("validate_all")) {
      validate_all->set("ckpt_paths", entry.value, entry.key_mark);
    }
  }

  Diagnostics& diagnostics_;
  Node trainer_;
  std::optional<Node> grad_accum_micro_batch_;
};

}  // namespace

// TF Estimator's keys that no PyTorch release's runconfig took (1.9's also took
// save_summary_steps and keep_checkpoint_max).
bool is_tensorflow_layout(const Node& params) {
  const Node* runconfig = params.find("runconfig");
  if (!runconfig || !runconfig->is_map()) return false;
  return std::any_of(runconfig->entries().begin(), runconfig->entries().end(),
                     [](const Node::Entry& entry) {
                       return entry.key == "save_checkpoints_steps" ||
                              entry.key == "log_step_count_steps" || entry.key == "tf_random_seed";
                     });
}

Node convert_legacy_params(const Node& params, Diagnostics& diagnostics) {
  return LegacyConverter(diagnostics).convert(params);
}

Node convert_runconfig_keys(const Node& runconfig, Diagnostics& diagnostics) {
  return LegacyConverter(diagnostics).convert_runconfig_only(runconfig);
}

}  // namespace csrun::config

#include "class_catalog.hpp"
#include "param_types.hpp"

namespace csrun::config {

namespace {

using T = ValueType;

ClassEntry callback(const std::string& name, std::vector<Field> fields,
                    UnknownKeys unknown = UnknownKeys::error_pydantic) {
  return ClassEntry{name, make_schema(name, std::move(fields), unknown), {}, {}};
}

// A Model Zoo class whose job has no counterpart in csrun (an appliance service, a
// notification, an external harness): accepted, with a warning.
ClassEntry without_effect(const std::string& name, const std::string& what) {
  return ClassEntry{name,
                    make_schema(name, {}, UnknownKeys::warn_unused),
                    {},
                    name + " (" + what + ") has no effect in csrun"};
}

// The backend flags csrun reads (the micro-batch, retracing); the others steer the appliance's
// compiler, runtime and cluster, which csrun does not have.
std::vector<Field> flag_fields() {
  std::vector<Field> fields = {
      optional_field("csx.performance.micro_batch_size", micro_batch_size_type()),
      optional_field("csx.debug.retrace_every_iteration", T::boolean()),
  };
  for (const char* flag : {"csx.debug.lazy_initialization",
                           "csx.debug.log_initialization",
                           "csx.debug.drop_data",
                           "csx.debug.fabric_type_blacklist",
                           "csx.debug.ini",
                           "csx.debug.debug_args",
                           "csx.performance.transfer_processes",
                           "csx.debug.compile_crd_memory_gi",
                           "csx.debug.execute_crd_memory_gi",
                           "csx.debug.wrk_memory_gi",
                           "csx.debug.act_memory_gi",
                           "csx.debug.cmd_memory_gi",
                           "csx.debug.wgt_memory_gi",
                           "csx.debug.chf_memory_gi",
                           "csx.performance.max_transfer_bytes",
                           "csx.performance.compress_weights",
                           "csx.performance.use_speculative_optimizers",
                           "csx.cluster.auto_taint",
                           "csx.storage.s3.profile",
                           "csx.debug.skip_weight_init",
                           "csx.debug.optimize_initialization",
                           "csx.debug.implicit_cast_cb16_to_fp32",
                           "csx.debug.save_gpv",
                           "csx.debug.check_constraints",
                           "csx.debug.op_definition_module",
                           "csx.debug.skip_connectivity_check"}) {
    fields.push_back(no_effect_field(
        flag, std::string(flag) +
                  " steers the appliance's compiler, runtime or cluster; it has no effect in "
                  "csrun"));
  }
  return fields;
}

}  // namespace

const ClassCatalog& callback_catalog() {
  static const ClassCatalog catalog(
      "callback",
      {
          callback("CheckLoss", {}),
          callback("ComputeNorm", {}),
          callback("LogOptimizerParamGroup", {optional_field("keys", string_or_strings())}),
          callback("ModelEvalMetrics", {}),
          callback("RateProfiler", {}),
          callback("DurationProfiler", {}),
          callback("FlopUtilization", {}),
          callback("SavePerformanceData", {}),
          callback("KeepNCheckpoints", {optional_field("n", positive_integer())}),
          callback("LoadCheckpointStates",
                   {optional_field("load_checkpoint_states", string_or_strings())}),
          callback("SaveCheckpointState", {optional_field("k", positive_integer()),
                                           optional_field("checkpoint_states", string_or_strings()),
                                           optional_field("checkpoint_name", T::string())}),
          callback("GlobalFlags", flag_fields(), UnknownKeys::warn_unused),
          callback("ScopedTrainFlags", flag_fields(), UnknownKeys::warn_unused),
          callback("ScopedValidateFlags", flag_fields(), UnknownKeys::warn_unused),
          callback("LogInputSummaries", {}),
          callback("NaNChecker", {}),
          callback("CountParams", {}),
          callback("ModelZooParamsMetadata", {}),
          callback("SamplesStreamedInfo", {}),
          without_effect("DebugArgsPath", "appliance debug arguments"),
          without_effect("DumpActivations", "appliance activation dumps"),
          without_effect("DumpAvailableTensorNames", "appliance tensor listing"),
          without_effect("LogSparsity", "sparsity summaries"),
          without_effect("WeightCompression", "appliance weight compression"),
          without_effect("SelectiveGrad", "selective gradients"),
          without_effect("Lora", "LoRA adapters"),
          without_effect("SummaryTensorListener", "appliance tensor listeners"),
          without_effect("NormTensorListener", "appliance tensor listeners"),
          without_effect("Listener", "appliance tensor listeners"),
          without_effect("EmailNotification", "e-mail notification"),
          without_effect("SlackNotification", "Slack notification"),
          without_effect("SkipSamples", "sample skipping"),
          without_effect("EleutherEvalHarness", "the Eleuther evaluation harness"),
          without_effect("BigCodeEvalHarness", "the BigCode evaluation harness"),
          without_effect("HFCacheDir", "the Hugging Face cache"),
          without_effect("OpProfiler", "the appliance op profiler"),
          without_effect("ComputeNormGNS", "gradient-noise-scale norms"),
          without_effect("LossAccumulationCallback", "loss accumulation across steps"),
          without_effect("EarlyExit", "stopping on a metric's value"),
          without_effect("RunSchedule", "profiling a chosen range of steps"),
          without_effect("SaveOldLogProbs", "log-probabilities for reinforcement learning"),
          without_effect("Profiler", "the PyTorch profiler"),
      },
      "", true);
  return catalog;
}

const ClassCatalog& logger_catalog() {
  static const ClassCatalog catalog(
      "logger", {
                    callback("ProgressLogger", {}),
                    callback("TensorBoardLogger",
                             {optional_field("summary_dir", T::string().or_null()),
                              default_field("legacy_event_dirs", T::boolean(), value(false))}),
                    without_effect("TelemetryLogger", "Cerebras telemetry"),
                    without_effect("WandbLogger", "Weights & Biases logging"),
                });
  return catalog;
}

}  // namespace csrun::config

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node.hpp"
#include "release.hpp"

namespace csrun::config {

enum class ParamsFormat { legacy, trainer, trainer_list };
enum class Device { csx, cpu, gpu };
enum class HalfType { float16, bfloat16, cbfloat16 };

const char* format_name(ParamsFormat format);
const char* device_name(Device device);
const char* half_type_name(HalfType type);

struct ClusterConfig {
  std::int64_t num_csx = 1;
  std::int64_t num_workers_per_csx = 1;
};

// How the wafer runs the model: everything resident (layer pipelined), weights streamed in layer
// by layer (weight streaming), or whichever fits (auto).
enum class ExecutionMode { automatic, pipelined, weight_streaming };
const char* execution_mode_name(ExecutionMode mode);  // "auto", "pipelined", "weight_streaming"

struct BackendSpec {
  Device device = Device::csx;
  bool device_defaulted = false;  // neither device nor backend_type was given
  ExecutionMode execution_mode = ExecutionMode::automatic;
  std::optional<std::string> compile_dir;
  bool compile_only = false;
  bool validate_only = false;
  bool retrace_every_iteration = false;
  ClusterConfig cluster;
};

struct LossScaling {
  bool dynamic = false;
  double factor = 1.0;  // the static scale when not dynamic
  std::optional<double> initial_loss_scale;
  std::int64_t steps_per_increase = 2000;
  std::optional<double> min_loss_scale;
  std::optional<double> max_loss_scale;
  // TensorFlow's CSDynamicLossScale (the TensorFlow layout): the scale halves only when more
  // than this share of the steps since it last changed overflowed, and doubles after
  // steps_per_increase steps, overflowing ones counted. Without it, cerebras.pytorch's
  // GradScaler: every overflow halves the scale.
  std::optional<double> overflow_tolerance;
};

struct PrecisionSpec {
  bool enabled = true;
  HalfType fp16_type = HalfType::bfloat16;
  std::int64_t precision_opt_level = 1;
  LossScaling loss_scaling;
  std::optional<double> max_gradient_norm;
  std::optional<double> max_gradient_value;
  bool log_loss_scale = false;
};

// eval_frequency: every N steps, or a fraction of the total steps in (0, 1].
struct EvalFrequency {
  std::optional<std::int64_t> steps;
  std::optional<double> fraction;
};

struct LoopSpec {
  std::optional<std::int64_t> num_steps;
  std::optional<std::int64_t> max_steps;
  std::optional<std::int64_t> num_epochs;
  std::optional<std::int64_t> steps_per_epoch;
  std::optional<std::int64_t> eval_steps;
  std::optional<EvalFrequency> eval_frequency;
  std::int64_t grad_accum_steps = 1;
};

struct CheckpointSpec {
  std::optional<std::int64_t> steps;
  bool autoload_last_checkpoint = true;
  bool disable_strict_checkpoint_loading = false;
  bool save_initial_checkpoint = false;
  std::optional<std::string> checkpoint_root;
  std::string checkpoint_name = "checkpoint_{step}.mdl";
  bool strict_version = true;
  std::optional<std::int64_t> keep_last;            // KeepNCheckpoints / max_checkpoints
  std::vector<std::string> load_checkpoint_states;  // empty = all
};

struct LoggingSpec {
  std::int64_t log_steps = 1;
  std::string log_level = "INFO";
};

// A polymorphic entry written as {ClassName: {params}}: an optimizer, scheduler, callback
// or logger. `params` is checked and in normal form.
struct ClassSpec {
  std::string type;
  Node params;
  SourceMark mark;
  std::string path;
  std::vector<ClassSpec> children;  // SequentialLR / ChainedScheduler members
  bool disabled = false;            // {ClassName: null}: turns a default callback off
};

struct ModelSection {
  std::string name;           // empty when a legacy file leaves it implicit
  bool name_written = false;  // a name key is there, valid or not
  Node params;                // every key except name, as written (the model registry checks them)
  SourceMark mark;
  std::string path;
};

// What to load before running: the latest checkpoint in model_dir, nothing, or a file.
struct CheckpointChoice {
  enum class Kind { autoload, none, path };
  Kind kind = Kind::autoload;
  std::string path;
  SourceMark mark;
};

struct FitSpec {
  Node train_dataloader;
  std::vector<Node> val_dataloaders;
  CheckpointChoice checkpoint;
};

struct ValidateSpec {
  Node val_dataloader;
  CheckpointChoice checkpoint;
};

struct ValidateAllSpec {
  std::vector<Node> val_dataloaders;
  std::vector<Node> checkpoint_paths;  // strings, globs allowed; empty = all in model_dir
};

struct TrainerSpec {
  std::size_t index = 0;
  ParamsFormat format = ParamsFormat::trainer;
  bool tensorflow_layout = false;  // Release 1.6's TensorFlow layout, read as the PyTorch one
  // The Model Zoo releases the file is likely written for (its layout and release-specific keys).
  ReleaseRange releases;
  SourceMark mark;
  BackendSpec backend;
  std::string model_dir = "./model_dir";
  std::optional<std::int64_t> seed;
  ModelSection model;
  std::optional<ClassSpec> optimizer;
  std::vector<ClassSpec> schedulers;
  PrecisionSpec precision;
  LoopSpec loop;
  bool loop_defaulted = false;  // no loop section: one epoch, as the Model Zoo's Trainer does
  CheckpointSpec checkpoint;
  LoggingSpec logging;
  std::vector<ClassSpec> callbacks;
  std::vector<ClassSpec> loggers;
  std::optional<FitSpec> fit;
  std::optional<ValidateSpec> validate;
  std::optional<ValidateAllSpec> validate_all;
  Node tree;  // the whole trainer in trainer format, as normalized
};

// The path of `key` of `trainer`'s loop section (eval_frequency, max_steps, ...) in its params
// file's own layout, as --set takes it: runconfig.KEY in a legacy file, trainer.init.loop.KEY,
// or trainer.N.trainer.init.loop.KEY in a list of trainers.
std::string loop_key_path(const TrainerSpec& trainer, std::string_view key);

struct RunSpec {
  std::string params_path;
  ParamsFormat format = ParamsFormat::trainer;
  std::vector<TrainerSpec> trainers;
};

}  // namespace csrun::config

#include "model_state.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "nn/initializers.hpp"
#include "runtime/thread_team.hpp"

namespace csrun::runner {

namespace {

std::string dims_text(const std::vector<std::uint64_t>& dims) {
  std::string text = "(";
  for (std::size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

// A checkpoint entry loads into a model variable only with its exact shape and kind of number.
void check_fits(const std::vector<std::uint64_t>& stored_dims, bool stored_integer,
                const graph::TensorType& type, const std::string& key, const std::string& path) {
  std::vector<std::uint64_t> dims(type.shape.begin(), type.shape.end());
  if (stored_dims != dims) {
    std::string numbered =
        key.starts_with("optimizer.state.")
            ? " (the optimizer's state is numbered by parameter: a checkpoint of a model with "
              "other parameters loads its model alone, with the LoadCheckpointStates callback's "
              "load_checkpoint_states: model)"
            : "";
    throw CheckpointError("checkpoint " + path + ": '" + key + "' has shape " +
                          dims_text(stored_dims) + "; the model's is " + dims_text(dims) +
                          numbered);
  }
  bool integer_variable = !graph::is_floating(type.dtype);
  if (stored_integer != integer_variable) {
    throw CheckpointError("checkpoint " + path + ": '" + key + "' is stored as " +
                          (stored_integer ? "integers" : "floating-point numbers") +
                          "; the model's is " + type.to_string());
  }
}

// load_checkpoint_states names top-level states (model, optimizer, schedulers, grad_scaler,
// dataloader, global_step); 2.0-2.2 called the schedulers' lr_scheduler, the name of their
// entries.
bool state_wanted(const config::CheckpointSpec& settings, const std::string& key) {
  const std::vector<std::string>& states = settings.load_checkpoint_states;
  if (states.empty()) return true;
  auto listed = [&](std::string_view name) {
    return std::find(states.begin(), states.end(), name) != states.end();
  };
  std::string top = key.substr(0, key.find('.'));
  if (top == "lr_scheduler") return listed("schedulers") || listed("lr_scheduler");
  return listed(top);
}

std::int64_t stored_integer(const Checkpoint& checkpoint, const std::string& key) {
  auto found = checkpoint.tensors.find(key);
  return found == checkpoint.tensors.end() ? 0 : static_cast<std::int64_t>(found->second.value(0));
}

// A variable's values as a checkpoint stores them: f32 borrowed where they lie, integers as
// int32, 16-bit floats widened to float32.
CheckpointTensor stored_values(const runtime::Executable& executable,
                               const graph::Variable& variable) {
  runtime::Executable::Slot slot = executable.slot(variable.name);
  const graph::TensorType& type = executable.type(slot);
  std::vector<std::uint64_t> dims(type.shape.begin(), type.shape.end());
  if (type.dtype == graph::DType::f32) {
    return {std::move(dims), executable.floats(slot)};
  }
  std::vector<double> values = executable.read(slot);
  if (graph::is_floating(type.dtype))
    return {std::move(dims), CheckpointTensor::Floats(values.begin(), values.end())};
  return {std::move(dims), CheckpointTensor::Integers(values.begin(), values.end())};
}

// The step keeps a parameter's 16-bit copy, and the executable rounds it again after the parameter
// is written: it is neither initialized nor a checkpoint entry.
bool stored(const graph::Variable& variable) {
  return variable.role != graph::VariableRole::half_copy;
}

// "'a', 'b', 'c' and 4 more"
std::string some_names(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 3;
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i)
    text += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
  return text;
}

// The model a checkpoint's metadata names: csrun's object, or the last of the Model Zoo's list.
std::string model_named_in(const std::string& metadata) {
  nlohmann::json parsed = nlohmann::json::parse(metadata, nullptr, false);
  if (parsed.is_array() && !parsed.empty()) parsed = parsed.back();
  if (!parsed.is_object()) return "";
  auto name = parsed.find("model_name");
  return name != parsed.end() && name->is_string() ? name->get<std::string>() : "";
}

// A checkpoint that holds none of the parameters is another model's, whatever the settings; one
// that misses some loads only with disable_strict_checkpoint_loading.
void check_parameters_held(const Restored& restored, const Checkpoint& checkpoint,
                           const std::string& path, const config::CheckpointSpec& settings) {
  const std::vector<std::string>& missing = restored.parameters_not_loaded;
  if (missing.empty()) return;
  if (missing.size() == restored.parameters) {
    std::string model = model_named_in(checkpoint.metadata);
    throw CheckpointError("checkpoint " + path + " holds none of the model's " +
                          std::to_string(restored.parameters) + " parameters (" +
                          some_names(missing) + "): it is another model's" +
                          (model.empty() ? "" : " (its metadata names model '" + model + "')"));
  }
  if (settings.disable_strict_checkpoint_loading) return;
  if (missing.size() == 1) {
    throw CheckpointError("checkpoint " + path + " has no entry '" + missing.front() +
                          "' (set disable_strict_checkpoint_loading to start it from its "
                          "initial value)");
  }
  throw CheckpointError("checkpoint " + path + " has no entries for " +
                        std::to_string(missing.size()) + " of the model's " +
                        std::to_string(restored.parameters) +
                        " parameters: " + some_names(missing) +
                        " (set disable_strict_checkpoint_loading to start them from their "
                        "initial values)");
}

}  // namespace

// Each variable is filled in parts on every core this process may use (the values do not depend
// on the split): f32 variables where they lie, so that their pages are first touched in
// parallel too; others through a buffer every such variable reuses.
void initialize_variables(runtime::Executable& executable, std::uint64_t seed,
                          const std::set<std::string>& skip) {
  runtime::ThreadTeam team(runtime::ThreadTeam::available_cores());
  std::vector<float> buffer;
  for (const graph::Variable& variable : executable.plan().graph.variables()) {
    if (!stored(variable) || skip.contains(variable.name)) continue;
    runtime::Executable::Slot slot = executable.slot(variable.name);
    const graph::TensorType& type = executable.type(slot);
    nn::InitialValues values(variable.init, type.shape, seed, variable.name);
    std::int64_t count = graph::element_count(type.shape);
    bool in_place = type.dtype == graph::DType::f32;
    if (!in_place) buffer.resize(static_cast<std::size_t>(count));
    std::span<float> target = in_place ? executable.floats_to_write(slot) : std::span(buffer);
    runtime::split_rows(&team, count, count, [&](std::int64_t first, std::int64_t last) {
      values.fill(
          target.subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(last - first)),
          first);
    });
    if (!in_place) executable.write(slot, std::span<const float>(target));
  }
}

Checkpoint snapshot(const runtime::Executable& executable, const LoopPosition& position,
                    std::string metadata) {
  Checkpoint checkpoint;
  for (const graph::Variable& variable : executable.plan().graph.variables()) {
    if (stored(variable)) checkpoint.tensors[variable.name] = stored_values(executable, variable);
  }
  auto scalar = [&](const std::string& key, std::int64_t value) {
    checkpoint.tensors[key] =
        CheckpointTensor{{}, CheckpointTensor::Integers{static_cast<std::int32_t>(value)}};
  };
  std::int64_t step = position.global_step.value_or(0);
  // lr_scheduler.last_epoch, the schedulers' step, is a variable of the training step.
  scalar("global_step", step);
  if (position.dataloader) {
    scalar("dataloader.epoch", position.dataloader->epoch);
    scalar("dataloader.samples_in_epoch", position.dataloader->sample);
  }
  checkpoint.metadata = std::move(metadata);
  return checkpoint;
}

Restored restore(runtime::Executable& executable, const std::string& path,
                 const config::CheckpointSpec& settings) {
  std::map<std::string, const graph::Variable*, std::less<>> wanted;
  for (const graph::Variable& variable : executable.plan().graph.variables()) {
    if (stored(variable) && state_wanted(settings, variable.name))
      wanted.emplace(variable.name, &variable);
  }
  // f32 variables are read where they lie: the run never holds a second copy of its state.
  auto place = [&](const std::string& key, const std::vector<std::uint64_t>& dims, bool integer) {
    if (!wanted.contains(key)) return EntryPlacement::leave_out();
    auto slot = executable.slot(key);
    check_fits(dims, integer, executable.type(slot), key, path);
    if (executable.type(slot).dtype != graph::DType::f32) return EntryPlacement::owned();
    return EntryPlacement::read_into(executable.floats_to_write(slot));
  };
  Checkpoint checkpoint = load_checkpoint(path, place);
  Restored restored;
  for (const auto& [name, variable] : wanted) {
    bool parameter = variable->role == graph::VariableRole::parameter;
    restored.parameters += parameter ? 1 : 0;
    auto found = checkpoint.tensors.find(name);
    if (found == checkpoint.tensors.end()) {
      if (parameter) restored.parameters_not_loaded.push_back(name);
      continue;
    }
    // A borrowed entry was checked where it was placed, and already lies in its variable.
    const CheckpointTensor& entry = found->second;
    if (!std::holds_alternative<CheckpointTensor::Borrowed>(entry.values)) {
      auto slot = executable.slot(name);
      check_fits(entry.dims, entry.integer(), executable.type(slot), name, path);
      std::visit([&](const auto& stored) { executable.write(slot, std::span(stored)); },
                 entry.values);
    }
    restored.variables.insert(name);
  }
  check_parameters_held(restored, checkpoint, path, settings);
  LoopPosition& position = restored.position;
  if (state_wanted(settings, "global_step")) position.global_step = checkpoint.global_step();
  if (state_wanted(settings, "dataloader.epoch")) {
    position.dataloader =
        data::BatchPosition{stored_integer(checkpoint, "dataloader.epoch"),
                            stored_integer(checkpoint, "dataloader.samples_in_epoch")};
  }
  return restored;
}

std::string not_loaded_text(const Restored& restored) {
  return std::to_string(restored.parameters_not_loaded.size()) + " of the model's " +
         std::to_string(restored.parameters) +
         " parameters are not in the checkpoint and start from their initial values "
         "(disable_strict_checkpoint_loading): " +
         some_names(restored.parameters_not_loaded);
}

}  // namespace csrun::runner

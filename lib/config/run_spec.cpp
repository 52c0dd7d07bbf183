#include "run_spec.hpp"

namespace csrun::config {

const char* format_name(ParamsFormat format) {
  switch (format) {
    case ParamsFormat::legacy:
      return "legacy";
    case ParamsFormat::trainer:
      return "trainer";
    case ParamsFormat::trainer_list:
      return "trainer list";
  }
  return "trainer";
}

std::string loop_key_path(const TrainerSpec& trainer, std::string_view key) {
  switch (trainer.format) {
    case ParamsFormat::legacy:
      return "runconfig." + std::string(key);
    case ParamsFormat::trainer:
      return "trainer.init.loop." + std::string(key);
    case ParamsFormat::trainer_list:
      return "trainer." + std::to_string(trainer.index) + ".trainer.init.loop." + std::string(key);
  }
  return std::string(key);
}

const char* device_name(Device device) {
  switch (device) {
    case Device::csx:
      return "CSX";
    case Device::cpu:
      return "CPU";
    case Device::gpu:
      return "GPU";
  }
  return "CSX";
}

const char* half_type_name(HalfType type) {
  switch (type) {
    case HalfType::float16:
      return "float16";
    case HalfType::bfloat16:
      return "bfloat16";
    case HalfType::cbfloat16:
      return "cbfloat16";
  }
  return "bfloat16";
}

const char* execution_mode_name(ExecutionMode mode) {
  switch (mode) {
    case ExecutionMode::automatic:
      return "auto";
    case ExecutionMode::pipelined:
      return "pipelined";
    case ExecutionMode::weight_streaming:
      return "weight_streaming";
  }
  return "auto";
}

}  // namespace csrun::config

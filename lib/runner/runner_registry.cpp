#include "runner_registry.hpp"

#include <map>
#include <stdexcept>

namespace csrun::runner {

namespace {

std::unique_ptr<Runner> wafer_simulator_runner(RunSetup setup, CallbackList callbacks) {
  return std::make_unique<TrainingLoop>(std::move(setup), std::move(callbacks));
}

std::unique_ptr<Runner> gpu_runner(RunSetup, CallbackList) {
  throw std::runtime_error(
      "device GPU needs a csrun built with CUDA, and this build has none; run on the wafer "
      "simulator (--target_device CSX) or the host (--target_device CPU)");
}

std::map<std::string, RunnerFactory, std::less<>>& runners() {
  static std::map<std::string, RunnerFactory, std::less<>> registry = {
      {"CSX", wafer_simulator_runner}, {"CPU", wafer_simulator_runner}, {"GPU", gpu_runner}};
  return registry;
}

}  // namespace

void register_runner(const std::string& device, RunnerFactory factory) {
  runners()[device] = std::move(factory);
}

bool has_runner(std::string_view device) {
  return runners().find(device) != runners().end();
}

std::unique_ptr<Runner> make_runner(RunSetup setup, CallbackList callbacks) {
  auto found = runners().find(setup.device);
  if (found == runners().end())
    throw std::runtime_error("no runner for device '" + setup.device + "'");
  return found->second(std::move(setup), std::move(callbacks));
}

}  // namespace csrun::runner

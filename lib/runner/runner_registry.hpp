#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "callbacks.hpp"
#include "training_loop.hpp"

namespace csrun::runner {

// Makes the runner of a device, as the Model Zoo's runner factory does: CSX runs the compiled
// plan on the wafer simulator (its cycles accrue simulated time), CPU runs the same loops on the
// host kernels, GPU is an error in a build without CUDA. validate and compile never make one:
// they stop at the plan. A factory registered for a device name replaces or adds a runner
// without changes to the loops.
using RunnerFactory = std::function<std::unique_ptr<Runner>(RunSetup, CallbackList)>;
void register_runner(const std::string& device, RunnerFactory factory);
bool has_runner(std::string_view device);

// The runner for setup.device. Throws std::runtime_error for a device without one.
std::unique_ptr<Runner> make_runner(RunSetup setup, CallbackList callbacks);

}  // namespace csrun::runner

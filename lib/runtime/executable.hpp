#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "compiler/plan.hpp"

namespace csrun::runtime {

// A plan's step graph as a running program (the wafer simulator): one arena laid out as the
// plan's memory plan says, every kernel's nodes bound to their buffers when the plan is loaded,
// static values computed then. A step runs the kernels in order and writes each variable's new
// value; it allocates nothing.
//
// Values are named as the plan's graph names them: batch inputs, variables (checkpoint keys) and
// outputs. A name resolves once to a slot, so the step loop never looks anything up by name.
class Executable {
 public:
  // Runs with the kernel set called `kernel_set` (host_kernels.hpp), or the selected one when it
  // is empty. Throws std::invalid_argument when the plan's memory plan does not fit its graph (a
  // damaged plan), a value has a rank the runtime does not support, or the set cannot run here.
  explicit Executable(compiler::Plan plan, std::string_view kernel_set = {});
  // The same, reading the variables it may read where `owner` keeps them
  // (compiler::variables_read_from) there instead of holding copies: an eval step beside the
  // training step reads the weights the training step updates, without a copy or a copy's memory.
  // Those variables are written through `owner` alone. Its sums (compiler::sums_kept_by) it adds
  // to in `owner`'s inputs: a micro-step's gradients go straight where its update reads them.
  // `owner` must outlive this executable.
  Executable(compiler::Plan plan, std::string_view kernel_set, Executable& owner);
  ~Executable();
  Executable(Executable&&) noexcept;
  Executable& operator=(Executable&&) noexcept;

  const compiler::Plan& plan() const;

  using Slot = std::int32_t;
  // The slot of an input, variable or output; throws std::invalid_argument for another name.
  Slot slot(std::string_view name) const;
  const graph::TensorType& type(Slot slot) const;
  // Whether a variable is read (or a sum added to) where its owner (the constructor's `owner`)
  // keeps it.
  bool borrowed(Slot slot) const;
  // The owner wrote borrowed variable `slot`: the next run() rounds it into its 16-bit copy first,
  // as for a write here. Throws std::invalid_argument for a variable that is not borrowed.
  void changed(Slot slot);

  // Writes an input or variable, converting to its dtype (16-bit floats round to nearest even).
  // The element count must be the value's; throws std::invalid_argument naming it otherwise. A
  // parameter's 16-bit copy (graph::VariableRole::half_copy) is the step's to keep: writing it
  // throws, and writing its parameter (here or through floats_to_write) has the next run() round
  // the parameter into it first.
  void write(Slot slot, std::span<const float> values);
  void write(Slot slot, std::span<const std::int32_t> values);
  void write(Slot slot, std::span<const double> values);
  // A value's elements, exactly (every dtype's values are doubles).
  std::vector<double> read(Slot slot) const;
  // The first element, without allocating: for scalars such as the loss.
  double scalar(Slot slot) const;
  // An f32 value's elements where they lie, valid until the next run() or write to it; throws
  // std::invalid_argument for a value of another dtype.
  std::span<const float> floats(Slot slot) const;
  // An f32 input's or variable's elements to write where they lie (by several threads at once,
  // say); throws std::invalid_argument for another dtype or for an output.
  std::span<float> floats_to_write(Slot slot);

  // One step: the 16-bit copies of parameters written since the last step rounded again, every
  // kernel in order, then the variables take their updated values. Throws
  // std::out_of_range when a batch holds an index outside its embedding table. Once in the step,
  // before anything writes an f32 variable of this executable's own (the first kernel that
  // does, or the updates taken after the last), it calls `before_f32_variables_change`, if
  // given: until then the variables' floats() still hold the values of the step before (what a
  // checkpoint written in the background reads while the step runs).
  void run(const std::function<void()>& before_f32_variables_change = {});

  // Gives the memory of the step's temporaries (the arena's beyond its persistent values, the
  // products' work space) back to the system until the next run() touches it again: for the time
  // another step runs beside this one (an evaluation inside fit). Its variables, inputs and
  // static values stay; the values of the outputs it returned do not.
  void release_temporaries();

  std::int64_t steps_run() const;
  // The wafer time of the steps run so far, from the plan's estimate (0 for a CPU plan).
  double simulated_seconds() const;
  // Bytes of the arena (the plan's peak) and of kernel-local scratch (chains' chunk buffers
  // included); of that scratch, the work space the kernels share (compiler::ScratchLayout::work).
  std::int64_t arena_bytes() const;
  std::int64_t scratch_bytes() const;
  std::int64_t work_space_bytes() const;

  // Where the host's time goes: once profiling is on, each run() after this executable's first
  // (which faults in the arena's pages) times every host step of the plan it runs.
  struct HostProfile {
    std::int64_t runs = 0;  // the runs timed
    // Of those runs whole: the copies between steps and a wait in run's hook included.
    double run_seconds = 0.0;
    std::vector<double> seconds;  // per entry of plan().host_steps (0 for those run at load)
    // The step's chains in registers (elementwise chains and softmaxes' row chains), and of those
    // the ones compiled to machine code (compiled_chain.hpp) rather than interpreted, and to which
    // code: "AVX-512" or "AVX2".
    int chains_in_registers = 0;
    int chains_compiled = 0;
    std::string_view chains_compiled_to;
  };
  void set_profiling(bool on);
  const HostProfile& host_profile() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace csrun::runtime

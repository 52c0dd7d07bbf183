#pragma once

// One kernel set: the hot kernels compiled for one instruction set (lib/runtime/CMakeLists.txt
// builds each set from the same sources and links it in isolation). Internal to lib/runtime.

#include <cstdint>
#include <string_view>

#include "chain_program.hpp"
#include "compiled_chain.hpp"
#include "tensor_ref.hpp"

namespace csrun::runtime {

struct KernelSet {
  // Sets task.scratch_floats for the node's kernel, once.
  void (*prepare)(NodeTask& task);
  // Computes task.out from task.in. Throws std::out_of_range for a gather or scatter index outside
  // its table (the data is wrong, not the plan).
  void (*run)(NodeTask& task);
  // run, for an elementwise node: the chunks of an elementwise chain.
  void (*run_elementwise)(NodeTask& task);
  // Elements [first, last) of a chain the plan runs in registers; `registers` holds
  // program.register_bytes() for this thread alone. With program.sums, `first` is a multiple of
  // kSumChunk and `chunk_sums` receives each chunk's totals (program.sums.size() a chunk).
  void (*run_chain_program)(const ChainProgram& program, float* registers, std::int64_t first,
                            std::int64_t last, double* chunk_sums);
  // The 16-bit conversions of half_precision.hpp over arrays: the same bits in every set.
  void (*narrow)(const float* values, std::uint16_t* out, std::int64_t count, graph::DType dtype);
  void (*widen)(const std::uint16_t* bits, float* out, std::int64_t count, graph::DType dtype);
  // Whether products of bfloat16 operands are multiplied in hardware, not widened to f32 first.
  bool (*multiplies_bf16)();
  // The vector instructions of the CPUs that run this set, which its chains in registers are
  // compiled to (compiled_chain.hpp) to run in place of run_chain_program; none for the baseline.
  ChainIsa compiled_chains;
};

// The set called `name`, or the selected one (host_kernels.hpp) for an empty name. Throws
// std::invalid_argument for a set this binary lacks or this CPU cannot run.
const KernelSet& kernel_set(std::string_view name);

}  // namespace csrun::runtime

// Each set's sources define it under this name; the build renames it csrun_kernel_set_NAME.
extern "C" const csrun::runtime::KernelSet csrun_kernel_set;

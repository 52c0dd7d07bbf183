#pragma once

// An elementwise chain the plan runs in registers (compiler::HostStep::in_registers), as a
// program: a kernel set takes a block of kChainLanes elements at a time through every instruction,
// so the chain's intermediate values never leave the core's L1 cache and its stored operands
// stream through memory once, as a loop written for the chain would. Internal to lib/runtime.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/types.hpp"

namespace csrun::runtime {

// Values per register: a few vector registers' worth, so that one instruction's loop pays for
// its dispatch and the registers of a long chain stay in L1.
inline constexpr std::int64_t kChainLanes = 128;

// What an instruction computes over a register's lanes, each as the node kernels compute it:
// arithmetic and comparisons of f32 values (a comparison's or is_finite's result, a boolean, is
// 0 or 1), exp, erf, exact gelu and sigmoid (transcendental.hpp), logical_not of a boolean,
// `where`, and `narrow`, a cast to a 16-bit format held as the float32 value it rounds to (a cast
// back, `copy`, is then exact, as is a boolean's to f32).
enum class ChainCode : std::uint8_t {
  add,
  sub,
  mul,
  div,
  maximum,
  minimum,
  less,
  less_equal,
  greater,
  greater_equal,
  equal,
  not_equal,
  is_finite,
  logical_not,
  neg,
  abs,
  relu,
  sqrt,
  rsqrt,
  exp,
  erf,
  gelu,  // exact: (x / 2) (1 + erf(x / sqrt(2)))
  sigmoid,
  where,  // a ? b : c
  narrow,
  copy,
};

struct ChainInstruction {
  ChainCode code = ChainCode::copy;
  graph::DType format = graph::DType::f32;  // narrow: the 16-bit format it rounds to
  std::int32_t out = 0;
  std::int32_t a = 0;
  std::int32_t b = 0;
  std::int32_t c = 0;
};

// A register filled from a stored value (f32, a 16-bit float widened, or a boolean as 0 or 1) as
// the chain broadcasts it (`how`: element i of the chain reads element i / repeat % period): a
// block of its elements, a row it repeats, a row's statistic, or one value for every lane (a single
// value, read once per run).
struct ChainLoad {
  std::int32_t reg = 0;
  const std::byte* data = nullptr;
  graph::DType dtype = graph::DType::f32;
  graph::FlatBroadcast how;

  bool single() const { return how.period == 1; }
};

// A register written back to a stored value of `dtype` (f32, a 16-bit float, or a boolean).
struct ChainStore {
  std::int32_t reg = 0;
  std::byte* data = nullptr;
  graph::DType dtype = graph::DType::f32;
};

// The most sums a program takes (the plan's compiler::kMaxChainSums).
inline constexpr std::size_t kMaxProgramSums = 4;

// Per block: the loads, then the instructions in order, then the stores and the sums. A whole f32
// operand is not loaded: instructions read its block where it is stored (`direct`). An instruction
// never writes a register it reads, and the stores follow every instruction, so a value updated in
// place (a parameter's new value in its own buffer) is read before it is written.
struct ChainProgram {
  std::vector<const float*> direct;  // per register: a whole f32 operand read in place, or null
  // A register whose values the caller computes into a buffer of the run's elements (the rows
  // of a softmax_grad a row chain reads, compiler::HostStep::row_chain), or -1.
  std::int32_t row_register = -1;
  // A register whose values the program writes into the caller's row buffer (a softmax's input
  // its row chain computes, for the kernel to normalize there), or -1.
  std::int32_t row_result = -1;
  std::vector<ChainLoad> loads;
  std::vector<ChainInstruction> instructions;
  std::vector<ChainStore> stores;
  // Registers summed chunk by chunk (compiler::HostStep::sums; full_sum.hpp's order).
  std::vector<std::int32_t> sums;
  std::int32_t registers = 0;

  std::int64_t register_bytes() const {
    return registers * kChainLanes * static_cast<std::int64_t>(sizeof(float));
  }
};

}  // namespace csrun::runtime

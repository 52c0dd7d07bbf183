#pragma once

// A chain program (chain_program.hpp) compiled to AVX-512 machine code when a step is loaded: one
// loop over its elements, 16 a vector, every value in a vector register. The interpreter takes a
// block of elements through one instruction at a time, each value going to L1 and back between
// instructions; a parameter's AdamW update ran 3-4x slower than a loop written for it, and the
// updates were a sixth of GPT-2 small's 16-bit step (docs/benchmarks.md). The code computes each
// instruction with the vector instruction that gives the interpreter's bits (IEEE arithmetic and
// square roots, its NaN rules for maximum and minimum, the 16-bit conversions of
// half_precision.hpp as integer arithmetic), and adds a chain's sums in full_sum.hpp's order: the
// same bits as the interpreter, which the tests check on random programs. Internal to
// lib/runtime.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "chain_program.hpp"

namespace csrun::runtime {

class CompiledChain {
 public:
  // The program of a chain of `count` elements as machine code, or nullopt where the code
  // generator does not take it (why_not says why): an operand broadcast other than element for
  // element, one value for every element, or a row (or one value a row) of a multiple of 16
  // elements, or such rows where the runs start at other than multiples of 16 (they start at
  // multiples of `starts_every`: a chain's chunks, a softmax's rows), more registers than the
  // vector registers hold, sums of a chain whose elements are not a multiple of eight, or memory
  // this process may not execute. The program's addresses are compiled in: the chain must not
  // move its operands afterwards (a plan's arena does not).
  static std::optional<CompiledChain> compile(const ChainProgram& program, std::int64_t count,
                                              std::int64_t starts_every);

  // Why `program` is not compiled, or empty where it is.
  static std::string why_not(const ChainProgram& program, std::int64_t count,
                             std::int64_t starts_every);

  // Elements [first, last), as run_chain_program computes them: with sums, `first` is a multiple
  // of kSumChunk and `chunk_sums` receives each chunk's totals (the program's sums a chunk).
  // A program that broadcasts rows or rows' values runs from a multiple of 16 elements
  // (std::invalid_argument otherwise). Threads may run disjoint ranges at once.
  void run(std::int64_t first, std::int64_t last, double* chunk_sums) const;

  // Elements [first, last) of a row chain, as run_chain_program_on_row computes them: `row`
  // holds their values of the row register or receives those of the row result.
  void run_on_row(std::int64_t first, std::int64_t last, float* row) const;

 private:
  struct Code;

  explicit CompiledChain(std::shared_ptr<const Code> code);
  void check_start(std::int64_t first) const;

  std::shared_ptr<const Code> code_;
};

// Why this process interprets the chains a kernel set could run compiled, decided once: the
// CSRUN_INTERPRET_CHAINS environment variable set to anything but 0 (for comparing the two), or a
// system that does not let a process execute memory it wrote; empty where it compiles them.
const std::string& why_chains_interpreted_here();

// Whether this process compiles chains where the kernel set runs the code.
bool chains_compiled_here();

}  // namespace csrun::runtime

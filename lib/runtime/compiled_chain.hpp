#pragma once

// A chain program (chain_program.hpp) compiled to machine code when a step is loaded: one loop
// over its elements, a vector at a time (16 lanes with AVX-512, 8 with AVX2), every value in a
// vector register. The interpreter takes a block of elements through one instruction at a time,
// each value going to L1 and back between instructions; a parameter's AdamW update ran 3-4x
// slower than a loop written for it, and the updates were a sixth of GPT-2 small's 16-bit step
// (docs/benchmarks.md). The code computes each instruction with the vector instruction that
// gives the interpreter's bits (IEEE arithmetic and square roots, its NaN rules for maximum and
// minimum, the 16-bit conversions of half_precision.hpp as integer arithmetic), and adds a
// chain's sums in full_sum.hpp's order: the same bits as the interpreter, which the tests check
// on random programs. Internal to lib/runtime.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chain_program.hpp"

namespace csrun::runtime {

// The vector instructions a kernel set's CPUs run, which its chains are compiled to: none (the
// baseline set interprets them), AVX2's or AVX-512's.
enum class ChainIsa : std::uint8_t { none, avx2, avx512 };

// "AVX-512", "AVX2" or "no".
std::string_view chain_isa_name(ChainIsa isa);

class CompiledChain {
 public:
  // The program of a chain of `count` elements as `isa`'s machine code, or nullopt where the code
  // generator does not take it (why_not says why): an operand broadcast other than element for
  // element, one value for every element, or a row (or one value a row) of a whole number of
  // vectors, or such rows where the runs start at other than whole vectors (they start at
  // multiples of `starts_every`: a chain's chunks, a softmax's rows), more registers than the
  // vector registers hold, sums of a chain whose elements are not a multiple of eight, or memory
  // this process may not execute. The program's addresses are compiled in: the chain must not
  // move its operands afterwards (a plan's arena does not).
  static std::optional<CompiledChain> compile(const ChainProgram& program, std::int64_t count,
                                              std::int64_t starts_every, ChainIsa isa);

  // Why `program` is not compiled to `isa`'s code, or empty where it is.
  static std::string why_not(const ChainProgram& program, std::int64_t count,
                             std::int64_t starts_every, ChainIsa isa);

  // Elements [first, last), as run_chain_program computes them: with sums, `first` is a multiple
  // of kSumChunk and `chunk_sums` receives each chunk's totals (the program's sums a chunk).
  // Returns where it stopped: `last`, or with AVX2, which has no masked loads and stores, the
  // first of the last elements short of a whole vector, which the caller's interpreter runs (a
  // program with sums runs only whole vectors: std::invalid_argument otherwise). A program that
  // broadcasts rows or rows' values runs from a whole vector (std::invalid_argument otherwise).
  // Threads may run disjoint ranges at once.
  std::int64_t run(std::int64_t first, std::int64_t last, double* chunk_sums) const;

  // Elements [first, last) of a row chain, as run_chain_program_on_row computes them: `row`
  // holds their values of the row register or receives those of the row result. Returns where it
  // stopped, as run does.
  std::int64_t run_on_row(std::int64_t first, std::int64_t last, float* row) const;

 private:
  struct Code;

  explicit CompiledChain(std::shared_ptr<const Code> code);
  std::int64_t whole_vectors_end(std::int64_t first, std::int64_t last) const;

  std::shared_ptr<const Code> code_;
};

// Why this process interprets the chains a kernel set could run compiled, decided once: the
// CSRUN_INTERPRET_CHAINS environment variable set to anything but 0 (for comparing the two), or a
// system that does not let a process execute memory it wrote; empty where it compiles them.
const std::string& why_chains_interpreted_here();

// Whether this process compiles chains where the kernel set runs the code.
bool chains_compiled_here();

}  // namespace csrun::runtime

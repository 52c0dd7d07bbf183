#include "chain_program.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "full_sum.hpp"
#include "graph/elementwise_semantics.hpp"
#include "half_precision.hpp"
#include "kernel_families.hpp"
#include "transcendental.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;

// `count` elements of what `load` reads from its `element`, as f32 values.
void convert(const ChainLoad& load, std::int64_t element, std::int64_t count, float* out) {
  if (load.dtype == DType::f32) {
    std::memcpy(out, reinterpret_cast<const float*>(load.data) + element,
                static_cast<std::size_t>(count) * sizeof(float));
    return;
  }
  if (graph::is_half(load.dtype)) {
    const auto* bits = reinterpret_cast<const std::uint16_t*>(load.data) + element;
    half_format::with_format(load.dtype, [&](auto format) {
      for (std::int64_t l = 0; l < count; ++l)
        out[l] = half_format::widen<decltype(format)>(bits[l]);
    });
    return;
  }
  const auto* truth = reinterpret_cast<const std::uint8_t*>(load.data) + element;
  for (std::int64_t l = 0; l < count; ++l)
    out[l] = truth[l] != 0 ? 1.0f : 0.0f;
}

float value_at(const ChainLoad& load, std::int64_t element) {
  float value = 0.0f;
  convert(load, element, 1, &value);
  return value;
}

// The lanes of one instruction: `Lanes` of them (known when it compiles, so the loop vectorizes
// without a remainder), or `count` for the last, partial block.
template <std::int64_t Lanes>
struct Block {
  const ChainProgram& program;
  float* registers;
  std::int64_t first;  // the block's first element
  std::int64_t count;
  ChunkSum* sums;         // program.sums' running sums of the block's chunk
  std::int64_t in_chunk;  // where the block starts in its chunk
  float* row;  // the block's values of program.row_register or program.row_result, or null

  std::int64_t lanes() const { return Lanes > 0 ? Lanes : count; }
  float* reg(std::int32_t index) const { return registers + index * kChainLanes; }
  // What an instruction reads: a register, or the block of an operand read in place.
  const float* source(std::int32_t index) const {
    if (index == program.row_register) return row;
    const float* stored = program.direct[static_cast<std::size_t>(index)];
    return stored != nullptr ? stored + first : reg(index);
  }

  template <class F>
  void unary(const ChainInstruction& instruction, F f) const {
    float* __restrict out = reg(instruction.out);
    const float* __restrict a = source(instruction.a);
    for (std::int64_t l = 0; l < lanes(); ++l)
      out[l] = f(a[l]);
  }

  template <class F>
  void binary(const ChainInstruction& instruction, F f) const {
    float* __restrict out = reg(instruction.out);
    const float* __restrict a = source(instruction.a);
    const float* __restrict b = source(instruction.b);
    for (std::int64_t l = 0; l < lanes(); ++l)
      out[l] = f(a[l], b[l]);
  }

  void where(const ChainInstruction& instruction) const {
    float* __restrict out = reg(instruction.out);
    const float* __restrict condition = source(instruction.a);
    const float* __restrict if_true = source(instruction.b);
    const float* __restrict if_false = source(instruction.c);
    for (std::int64_t l = 0; l < lanes(); ++l)
      out[l] = condition[l] != 0.0f ? if_true[l] : if_false[l];
  }

  void run(const ChainInstruction& instruction) const {
    auto truth = [](bool value) { return value ? 1.0f : 0.0f; };
    switch (instruction.code) {
      case ChainCode::add:
        return binary(instruction, [](float a, float b) { return a + b; });
      case ChainCode::sub:
        return binary(instruction, [](float a, float b) { return a - b; });
      case ChainCode::mul:
        return binary(instruction, [](float a, float b) { return a * b; });
      case ChainCode::div:
        return binary(instruction, [](float a, float b) { return a / b; });
      case ChainCode::maximum:
        return binary(instruction, [](float a, float b) { return graph::maximum_value(a, b); });
      case ChainCode::minimum:
        return binary(instruction, [](float a, float b) { return graph::minimum_value(a, b); });
      case ChainCode::less:
        return binary(instruction, [&](float a, float b) { return truth(a < b); });
      case ChainCode::less_equal:
        return binary(instruction, [&](float a, float b) { return truth(a <= b); });
      case ChainCode::greater:
        return binary(instruction, [&](float a, float b) { return truth(a > b); });
      case ChainCode::greater_equal:
        return binary(instruction, [&](float a, float b) { return truth(a >= b); });
      case ChainCode::equal:
        return binary(instruction, [&](float a, float b) { return truth(a == b); });
      case ChainCode::not_equal:
        return binary(instruction, [&](float a, float b) { return truth(a != b); });
      case ChainCode::is_finite:
        return unary(instruction, [&](float a) { return truth(std::isfinite(a)); });
      case ChainCode::logical_not:
        return unary(instruction, [&](float a) { return truth(a == 0.0f); });
      case ChainCode::neg:
        return unary(instruction, [](float a) { return -a; });
      case ChainCode::abs:
        return unary(instruction, [](float a) { return std::fabs(a); });
      case ChainCode::relu:
        return unary(instruction, [](float a) { return graph::relu_value(a); });
      case ChainCode::sqrt:
        return unary(instruction, [](float a) { return std::sqrt(a); });
      case ChainCode::rsqrt:
        return unary(instruction, [](float a) { return 1.0f / std::sqrt(a); });
      case ChainCode::exp:
        return transcendental::exp_values(source(instruction.a), reg(instruction.out), lanes());
      case ChainCode::erf:
        return transcendental::erf_values(source(instruction.a), reg(instruction.out), lanes());
      case ChainCode::gelu:
        return transcendental::gelu_values(source(instruction.a), reg(instruction.out), lanes());
      case ChainCode::sigmoid:
        return transcendental::sigmoid_values(source(instruction.a), reg(instruction.out), lanes());
      case ChainCode::where:
        return where(instruction);
      case ChainCode::narrow:
        return half_format::with_format(instruction.format, [&](auto format) {
          using F = decltype(format);
          unary(instruction,
                [](float a) { return half_format::widen<F>(half_format::narrow<F>(a)); });
        });
      case ChainCode::copy:
        return unary(instruction, [](float a) { return a; });
    }
  }

  // The block's elements of what `load` broadcasts: runs of the operand's elements (the whole
  // operand, a row it repeats, a sample's row) or runs of one element (a row's statistic).
  void load(const ChainLoad& load) const {
    float* out = reg(load.reg);
    const graph::FlatBroadcast& how = load.how;
    for (std::int64_t done = 0; done < lanes();) {
      std::int64_t index = first + done;
      std::int64_t element = how.element(index);
      std::int64_t run = std::min(lanes() - done, how.run_at(index));
      if (how.repeat == 1) {
        convert(load, element, run, out + done);
      } else {
        std::fill_n(out + done, run, value_at(load, element));
      }
      done += run;
    }
  }

  void store(const ChainStore& store) const {
    const float* __restrict values = reg(store.reg);
    if (store.dtype == DType::f32) {
      std::memcpy(reinterpret_cast<float*>(store.data) + first, values,
                  static_cast<std::size_t>(lanes()) * sizeof(float));
      return;
    }
    if (graph::is_half(store.dtype)) {
      std::uint16_t* __restrict bits = reinterpret_cast<std::uint16_t*>(store.data) + first;
      half_format::with_format(store.dtype, [&](auto format) {
        for (std::int64_t l = 0; l < lanes(); ++l)
          bits[l] = half_format::narrow<decltype(format)>(values[l]);
      });
      return;
    }
    std::uint8_t* __restrict truth = reinterpret_cast<std::uint8_t*>(store.data) + first;
    for (std::int64_t l = 0; l < lanes(); ++l)
      truth[l] = values[l] != 0.0f ? 1 : 0;
  }

  void run_program() const {
    for (const ChainLoad& stored : program.loads) {
      if (!stored.single()) load(stored);
    }
    for (const ChainInstruction& instruction : program.instructions)
      run(instruction);
    for (const ChainStore& stored : program.stores)
      store(stored);
    if (program.row_result >= 0)
      std::memcpy(row, reg(program.row_result), static_cast<std::size_t>(lanes()) * sizeof(float));
    for (std::size_t s = 0; s < program.sums.size(); ++s)
      sums[s].add(in_chunk, reg(program.sums[s]), lanes());
  }
};

// Every lane of a single value's register holds it, read as the run starts.
void fill_singles(const ChainProgram& program, float* registers) {
  for (const ChainLoad& stored : program.loads) {
    if (stored.single())
      std::fill_n(registers + stored.reg * kChainLanes, kChainLanes, value_at(stored, 0));
  }
}

// Elements [first, last) in blocks; `sums`, where the program has any, take those of one chunk;
// `row`, where it has a row register or a row result, holds that register's values of the
// elements.
void run_blocks(const ChainProgram& program, float* registers, std::int64_t first,
                std::int64_t last, ChunkSum* sums, float* row) {
  std::int64_t whole_end = first + (last - first) / kChainLanes * kChainLanes;
  std::int64_t chunk_first = first / kSumChunk * kSumChunk;
  auto row_at = [&](std::int64_t start) {
    return row == nullptr ? nullptr : row + (start - first);
  };
  for (std::int64_t start = first; start < whole_end; start += kChainLanes) {
    Block<kChainLanes>{program, registers,           start,        kChainLanes,
                       sums,    start - chunk_first, row_at(start)}
        .run_program();
  }
  if (whole_end < last) {
    Block<0>{program,          registers, whole_end,
             last - whole_end, sums,      whole_end - chunk_first,
             row_at(whole_end)}
        .run_program();
  }
}

}  // namespace

void run_chain_program(const ChainProgram& program, float* registers, std::int64_t first,
                       std::int64_t last, double* chunk_sums) {
  fill_singles(program, registers);
  if (program.sums.empty()) return run_blocks(program, registers, first, last, nullptr, nullptr);
  for (std::int64_t chunk = first; chunk < last; chunk += kSumChunk) {
    std::int64_t end = std::min(last, chunk + kSumChunk);
    std::array<ChunkSum, kMaxProgramSums> sums;
    sums.fill(ChunkSum(end - chunk));
    run_blocks(program, registers, chunk, end, sums.data(), nullptr);
    for (std::size_t s = 0; s < program.sums.size(); ++s)
      *chunk_sums++ = sums[s].total();
  }
}

void run_chain_program_on_row(const ChainProgram& program, float* registers, std::int64_t first,
                              std::int64_t last, float* row) {
  fill_singles(program, registers);
  run_blocks(program, registers, first, last, nullptr, row);
}

}  // namespace csrun::runtime

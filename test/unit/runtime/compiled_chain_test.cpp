// Chain programs compiled to AVX-512 code (runtime/compiled_chain.hpp) against the interpreter
// (a kernel set's run_chain_program), bit for bit: random programs of every instruction, load,
// broadcast, store and sum, on special values, over element counts with and without a last
// partial vector and in parts as a team runs them; the 16-bit conversions on every rounding case
// and every 16-bit value; and the programs the generator leaves to the interpreter. The compiled
// code runs where the CPU runs the avx512 set; elsewhere these tests check only what is refused.

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/compiled_chain.hpp"
#include "runtime/full_sum.hpp"
#include "runtime/half_precision.hpp"
#include "runtime/host_kernels.hpp"
#include "runtime/kernel_set.hpp"
#include "runtime_fixture.hpp"

using namespace csrun;
using graph::DType;
using runtime::ChainCode;
using runtime::ChainProgram;
using runtime::CompiledChain;

namespace {

bool runs_compiled_chains() {
  std::vector<std::string_view> sets = runtime::runnable_kernel_sets();
  return std::find(sets.begin(), sets.end(), "avx512") != sets.end();
}

template <class T>
T bits_at(const std::byte* at) {
  T bits;
  std::memcpy(&bits, at, sizeof(bits));
  return bits;
}

std::size_t element_bytes(DType dtype) {
  if (dtype == DType::f32) return 4;
  return graph::is_half(dtype) ? 2 : 1;
}

// The values a program's f32 operands take: NaN, infinities, signed zeros, subnormals, the
// largest finite values, 16-bit rounding ties and overflows, and ordinary values.
std::vector<float> special_floats() {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return {std::numeric_limits<float>::quiet_NaN(),
          -std::numeric_limits<float>::quiet_NaN(),
          std::bit_cast<float>(0x7F800001u),  // a signaling NaN
          kInf,
          -kInf,
          0.0f,
          -0.0f,
          1e-40f,
          -1e-40f,
          std::numeric_limits<float>::denorm_min(),
          std::numeric_limits<float>::max(),
          -std::numeric_limits<float>::max(),
          1.0f,
          -1.0f,
          0.5f,
          3.0f,
          65504.0f,
          65520.0f,  // float16's largest finite value, and where it rounds to infinity
          std::bit_cast<float>(0x3F808000u),
          std::bit_cast<float>(0x3F818000u),  // bfloat16 ties to even, down and up
          6e-8f,
          3e-5f,
          1e-10f};  // float16 subnormals, and below cbfloat16's range
}

// A random program and the buffers it reads and writes; each value has a register of its own.
class RandomChain {
 public:
  RandomChain(std::mt19937& random, std::int64_t count) : random_(random), count_(count) {
    buffers_.reserve(64);  // the program holds pointers into them
    int direct = pick(1, 3);
    for (int d = 0; d < direct; ++d)
      add_direct();
    int loads = pick(1, 5);
    for (int l = 0; l < loads; ++l)
      add_load();
    int instructions = pick(3, 14);
    for (int i = 0; i < instructions && registers() < kMaxValues; ++i)
      add_instruction();
    int stores = pick(1, 4);
    for (int s = 0; s < stores; ++s)
      add_store();
    // Sums of computed values, as a chain sums them.
    if (count % runtime::kSumLanes == 0) {
      int sums = pick(0, 2);
      for (int s = 0; s < sums; ++s) {
        const auto& instruction = program_.instructions[static_cast<std::size_t>(
            pick(0, static_cast<int>(program_.instructions.size()) - 1))];
        program_.sums.push_back(instruction.out);
      }
    }
    program_.registers = registers();
    program_.direct.resize(static_cast<std::size_t>(registers()), nullptr);
    pristine_ = buffers_;
  }

  const ChainProgram& program() const { return program_; }
  std::int64_t count() const { return count_; }
  // The dtype of each buffer of a Result.
  const std::vector<DType>& dtypes() const { return dtypes_; }

  // What a run leaves: every buffer and the chunks' sums.
  struct Result {
    std::vector<std::vector<std::byte>> buffers;
    std::vector<double> sums;
  };

  template <class Run>
  Result run(Run run_part) {
    buffers_ = pristine_;
    Result result;
    result.sums.resize(static_cast<std::size_t>(runtime::sum_chunks(count_)) *
                       program_.sums.size());
    // Two parts, as a team of two runs a chain, split at a chunk.
    std::int64_t chunks = runtime::sum_chunks(count_);
    std::int64_t middle = std::min(count_, chunks / 2 * runtime::kSumChunk);
    for (auto [first, last] : {std::pair{std::int64_t{0}, middle}, std::pair{middle, count_}}) {
      if (first == last) continue;
      double* sums = result.sums.data() + first / runtime::kSumChunk * std::ssize(program_.sums);
      run_part(first, last, sums);
    }
    result.buffers = buffers_;
    return result;
  }

 private:
  static constexpr int kMaxValues = 24;

  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }
  int registers() const { return next_register_; }
  std::int32_t take() { return next_register_++; }

  DType random_dtype(bool with_f32) {
    std::vector<DType> dtypes = {DType::bf16, DType::f16, DType::cb16, DType::boolean};
    if (with_f32) dtypes.push_back(DType::f32);
    return dtypes[static_cast<std::size_t>(pick(0, static_cast<int>(dtypes.size()) - 1))];
  }

  // `elements` random values of `dtype`: special floats, random bits for 16-bit values, bytes
  // that are 0, 1 or neither for booleans.
  std::byte* add_buffer(DType dtype, std::int64_t elements) {
    dtypes_.push_back(dtype);
    std::vector<std::byte>& buffer = buffers_.emplace_back(
        static_cast<std::size_t>(elements) * element_bytes(dtype) + 64);  // room for overreads
    static const std::vector<float> floats = special_floats();
    for (std::int64_t e = 0; e < elements; ++e) {
      std::byte* at = buffer.data() + e * static_cast<std::int64_t>(element_bytes(dtype));
      if (dtype == DType::f32) {
        float value =
            pick(0, 2) == 0
                ? std::uniform_real_distribution<float>(-4, 4)(random_)
                : floats[static_cast<std::size_t>(pick(0, static_cast<int>(floats.size()) - 1))];
        std::memcpy(at, &value, sizeof(value));
      } else if (graph::is_half(dtype)) {
        auto bits = static_cast<std::uint16_t>(pick(0, 0xFFFF));
        std::memcpy(at, &bits, sizeof(bits));
      } else {
        const std::uint8_t truths[] = {0, 1, 2, 255};
        *at = static_cast<std::byte>(truths[pick(0, 3)]);
      }
    }
    return buffer.data();
  }

  void add_direct() {
    std::int32_t reg = take();
    program_.direct.resize(static_cast<std::size_t>(reg) + 1, nullptr);
    program_.direct[static_cast<std::size_t>(reg)] =
        reinterpret_cast<const float*>(add_buffer(DType::f32, count_));
  }

  // Element for element, one value for every element, a row of a multiple of 16 elements
  // repeated, or one value a row of a multiple of 16 elements.
  void add_load() {
    DType dtype = random_dtype(true);
    graph::FlatBroadcast how;
    std::int64_t elements = count_;
    switch (pick(0, 3)) {
      case 0:
        how.period = count_;
        break;
      case 1:
        elements = 1;
        break;
      case 2:
        how.period = 16 * pick(1, 4);
        elements = how.period;
        break;
      default:
        how.repeat = 16 * pick(1, 3);
        how.period = pick(2, 5);
        elements = how.period;
        break;
    }
    // Each broadcast the code follows with counters takes general-purpose registers: at most
    // three here.
    if (elements != 1 && elements != count_ && ++counted_ > 3) {
      how = graph::FlatBroadcast{};
      how.period = count_;
      elements = count_;
    }
    program_.loads.push_back({take(), add_buffer(dtype, elements), dtype, how});
  }

  void add_instruction() {
    runtime::ChainInstruction instruction;
    instruction.code = static_cast<ChainCode>(pick(0, static_cast<int>(ChainCode::copy)));
    const DType formats[] = {DType::bf16, DType::f16, DType::cb16};
    instruction.format = formats[pick(0, 2)];
    instruction.a = pick(0, registers() - 1);
    instruction.b = pick(0, registers() - 1);
    instruction.c = pick(0, registers() - 1);
    instruction.out = take();
    program_.instructions.push_back(instruction);
  }

  // A value in a register (not an operand read in place, which has none), to a buffer of its
  // own or over a direct operand (an update in place).
  void add_store() {
    std::int32_t reg = pick(static_cast<int>(program_.direct.size()), registers() - 1);
    if (pick(0, 3) == 0) {
      const float* direct = program_.direct.front();
      program_.stores.push_back(
          {reg, reinterpret_cast<std::byte*>(const_cast<float*>(direct)), DType::f32});
      return;
    }
    DType dtype = random_dtype(true);
    program_.stores.push_back({reg, add_buffer(dtype, count_), dtype});
  }

  std::mt19937& random_;
  std::int64_t count_;
  ChainProgram program_;
  std::vector<std::vector<std::byte>> buffers_;
  std::vector<std::vector<std::byte>> pristine_;
  std::vector<DType> dtypes_;
  std::int32_t next_register_ = 0;
  int counted_ = 0;
};

std::string program_text(const ChainProgram& program) {
  std::string text = "program of " + std::to_string(program.registers) + " registers:\n";
  for (std::size_t reg = 0; reg < program.direct.size(); ++reg) {
    if (program.direct[reg] != nullptr) text += "  r" + std::to_string(reg) + " read in place\n";
  }
  for (const runtime::ChainLoad& load : program.loads) {
    text += "  r" + std::to_string(load.reg) + " loads " + graph::dtype_name(load.dtype) +
            ", repeat " + std::to_string(load.how.repeat) + ", period " +
            std::to_string(load.how.period) + "\n";
  }
  for (const runtime::ChainInstruction& instruction : program.instructions) {
    text += "  r" + std::to_string(instruction.out) + " = code " +
            std::to_string(static_cast<int>(instruction.code)) + " (r" +
            std::to_string(instruction.a) + ", r" + std::to_string(instruction.b) + ", r" +
            std::to_string(instruction.c) + ") " + graph::dtype_name(instruction.format) + "\n";
  }
  for (const runtime::ChainStore& store : program.stores)
    text += "  r" + std::to_string(store.reg) + " stored " + graph::dtype_name(store.dtype) + "\n";
  for (std::int32_t sum : program.sums)
    text += "  r" + std::to_string(sum) + " summed\n";
  return text;
}

// A stored element as f32 (a boolean's byte as its value), for comparing NaN with NaN.
float element_value(const std::byte* at, DType dtype) {
  if (dtype == DType::f32) return std::bit_cast<float>(bits_at<std::uint32_t>(at));
  if (graph::is_half(dtype)) return runtime::widen_from_half(bits_at<std::uint16_t>(at), dtype);
  return static_cast<float>(bits_at<std::uint8_t>(at));
}

bool same_value(double x, double y) {
  return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y) ||
         (std::isnan(x) && std::isnan(y));
}

// Where two runs' results differ: the first differing element of each buffer, the first
// differing sum. A NaN agrees with a NaN whatever its sign and payload: IEEE leaves them open,
// and the interpreter's depend on which operand its compiler puts first.
std::string differences(const RandomChain::Result& interpreted, const RandomChain::Result& compiled,
                        const RandomChain& chain) {
  std::string found;
  for (std::size_t b = 0; b < interpreted.buffers.size(); ++b) {
    DType dtype = chain.dtypes()[b];
    std::size_t bytes = element_bytes(dtype);
    const std::vector<std::byte>& expected = interpreted.buffers[b];
    const std::vector<std::byte>& actual = compiled.buffers[b];
    for (std::size_t i = 0; i + bytes <= expected.size(); i += bytes) {
      float x = element_value(expected.data() + i, dtype);
      float y = element_value(actual.data() + i, dtype);
      if (std::memcmp(expected.data() + i, actual.data() + i, bytes) == 0 || same_value(x, y))
        continue;
      found += "buffer " + std::to_string(b) + " (" + graph::dtype_name(dtype) + ") element " +
               std::to_string(i / bytes) + ": interpreted " + std::to_string(x) + ", compiled " +
               std::to_string(y) + "\n";
      break;
    }
  }
  for (std::size_t s = 0; s < interpreted.sums.size(); ++s) {
    if (same_value(interpreted.sums[s], compiled.sums[s])) continue;
    found += "sum " + std::to_string(s) + ": interpreted " + std::to_string(interpreted.sums[s]) +
             ", compiled " + std::to_string(compiled.sums[s]) + "\n";
    break;
  }
  if (!found.empty()) found += program_text(chain.program());
  return found;
}

std::vector<float> interpreter_registers(const ChainProgram& program) {
  return std::vector<float>(static_cast<std::size_t>(program.registers) * runtime::kChainLanes);
}

}  // namespace

TEST_CASE("compiled chains give the interpreter's bits on random programs of every instruction") {
  if (!runs_compiled_chains()) {
    SUCCEED("this CPU runs no AVX-512 code: chains are interpreted");
    return;
  }
  const runtime::KernelSet& interpreter = runtime::kernel_set("avx512");
  std::mt19937 random(20261205);
  const std::int64_t counts[] = {1, 7, 15, 16, 17, 40, 100, 4096, 4096 + 24, 3 * 4096 + 8, 9999};
  int compiled_programs = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::int64_t count = counts[static_cast<std::size_t>(trial) % std::size(counts)];
    RandomChain chain(random, count);
    std::optional<CompiledChain> compiled =
        CompiledChain::compile(chain.program(), count, runtime::kSumChunk);
    INFO("trial " << trial << ", " << count << " elements: "
                  << CompiledChain::why_not(chain.program(), count, runtime::kSumChunk));
    REQUIRE(compiled.has_value());
    ++compiled_programs;
    std::vector<float> registers = interpreter_registers(chain.program());
    RandomChain::Result interpreted =
        chain.run([&](std::int64_t first, std::int64_t last, double* sums) {
          interpreter.run_chain_program(chain.program(), registers.data(), first, last, sums);
        });
    RandomChain::Result ran = chain.run([&](std::int64_t first, std::int64_t last, double* sums) {
      compiled->run(first, last, sums);
    });
    std::string found = differences(interpreted, ran, chain);
    INFO(found);
    CHECK(found.empty());
  }
  CHECK(compiled_programs == 400);
}

TEST_CASE("compiled chains round to 16 bits and widen bit for bit as the scalar conversions do") {
  if (!runs_compiled_chains()) {
    SUCCEED("this CPU runs no AVX-512 code: chains are interpreted");
    return;
  }
  std::vector<float> values = test::rounding_patterns();
  auto count = static_cast<std::int64_t>(values.size());
  std::vector<std::uint16_t> every_half(0x10000);
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits)
    every_half[bits] = static_cast<std::uint16_t>(bits);
  for (DType dtype : {DType::bf16, DType::f16, DType::cb16}) {
    INFO(graph::dtype_name(dtype));
    // Stored narrowed, and narrowed in a register (the 16-bit value as f32).
    ChainProgram narrowing;
    narrowing.registers = 2;
    narrowing.direct = {values.data(), nullptr};
    narrowing.instructions.push_back({ChainCode::narrow, dtype, 1, 0, 0, 0});
    std::vector<std::uint16_t> stored(values.size());
    std::vector<float> in_register(values.size());
    narrowing.stores.push_back({0, reinterpret_cast<std::byte*>(stored.data()), dtype});
    narrowing.stores.push_back({1, reinterpret_cast<std::byte*>(in_register.data()), DType::f32});
    CompiledChain::compile(narrowing, count, count).value().run(0, count, nullptr);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::uint16_t expected = runtime::narrow_to_half(values[i], dtype);
      mismatches += stored[i] != expected;
      mismatches += std::bit_cast<std::uint32_t>(in_register[i]) !=
                    std::bit_cast<std::uint32_t>(runtime::widen_from_half(expected, dtype));
    }
    CHECK(mismatches == 0);

    ChainProgram widening;
    widening.registers = 1;
    graph::FlatBroadcast whole;
    whole.period = 0x10000;
    widening.loads.push_back(
        {0, reinterpret_cast<const std::byte*>(every_half.data()), dtype, whole});
    std::vector<float> widened(every_half.size());
    widening.stores.push_back({0, reinterpret_cast<std::byte*>(widened.data()), DType::f32});
    CompiledChain::compile(widening, 0x10000, 0x10000).value().run(0, 0x10000, nullptr);
    mismatches = 0;
    for (std::size_t bits = 0; bits < every_half.size(); ++bits) {
      mismatches += std::bit_cast<std::uint32_t>(widened[bits]) !=
                    std::bit_cast<std::uint32_t>(runtime::widen_from_half(every_half[bits], dtype));
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE(
    "programs the code generator does not take are left to the interpreter, with the reason") {
  std::vector<float> values(64, 1.0f);
  auto bytes = reinterpret_cast<std::byte*>(values.data());
  ChainProgram simple;
  simple.registers = 2;
  simple.direct = {values.data(), nullptr};
  simple.instructions.push_back({ChainCode::sqrt, DType::f32, 1, 0, 0, 0});
  simple.stores.push_back({1, bytes, DType::f32});
  CHECK(CompiledChain::why_not(simple, 64, 64).empty());

  ChainProgram odd_rows = simple;
  graph::FlatBroadcast row;
  row.period = 24;  // a row of 24 elements: vectors would straddle rows
  odd_rows.registers = 3;
  odd_rows.direct.push_back(nullptr);
  odd_rows.loads.push_back({2, bytes, DType::f32, row});
  CHECK_THAT(CompiledChain::why_not(odd_rows, 64, 64), Catch::Contains("broadcasts an operand"));
  CHECK_FALSE(CompiledChain::compile(odd_rows, 64, 64).has_value());

  // A row's value of an empty value's rows: nothing to count.
  ChainProgram no_rows = odd_rows;
  no_rows.loads.back().how = graph::FlatBroadcast{16, 0, 1, 1};
  CHECK_THAT(CompiledChain::why_not(no_rows, 0, 64), Catch::Contains("broadcasts an operand"));

  ChainProgram rows = odd_rows;
  rows.loads.back().how.period = 32;
  CHECK(CompiledChain::why_not(rows, 64, 64).empty());
  // A softmax's rows of 40: its runs would start inside a vector.
  CHECK(CompiledChain::why_not(rows, 64, 40) ==
        "it broadcasts rows, and its runs start every 40 elements, not at multiples of 16");

  ChainProgram odd_sum = simple;
  odd_sum.sums.push_back(1);
  CHECK(CompiledChain::why_not(odd_sum, 60, 4096) == "it sums 60 elements, not a multiple of 8");
  CHECK(CompiledChain::why_not(odd_sum, 64, 4096).empty());

  ChainProgram crowded = simple;
  crowded.registers = 28;
  crowded.direct.resize(28, nullptr);
  CHECK(CompiledChain::why_not(crowded, 64, 64) ==
        "it holds 28 values at once, more than 27 vector registers");

  if (!runs_compiled_chains()) return;
  CHECK_THROWS_WITH(CompiledChain::compile(rows, 64, 64).value().run(8, 64, nullptr),
                    "a compiled chain that broadcasts rows runs from a multiple of 16 elements, "
                    "not from element 8");
}

TEST_CASE("a compiled row chain reads and writes the caller's row buffer") {
  if (!runs_compiled_chains()) {
    SUCCEED("this CPU runs no AVX-512 code: chains are interpreted");
    return;
  }
  // A softmax_grad's chain: the kernel's rows in the row register, scaled and stored; a softmax's:
  // its input computed into the row result. Elements 20 to 100, the caller's buffer holding those.
  constexpr std::int64_t kCount = 100;
  constexpr std::int64_t kFirst = 20;
  std::vector<float> values(kCount);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) - 50.0f;
  std::vector<float> scale = {0.125f};
  std::vector<float> scaled(kCount);
  ChainProgram reads_row;
  reads_row.registers = 3;
  reads_row.direct.assign(3, nullptr);
  reads_row.row_register = 0;
  reads_row.loads.push_back(
      {1, reinterpret_cast<const std::byte*>(scale.data()), DType::f32, graph::FlatBroadcast{}});
  reads_row.instructions.push_back({ChainCode::mul, DType::f32, 2, 0, 1, 0});
  reads_row.stores.push_back({2, reinterpret_cast<std::byte*>(scaled.data()), DType::f32});
  std::vector<float> row(values.begin() + kFirst, values.end());
  CompiledChain::compile(reads_row, kCount, kFirst).value().run_on_row(kFirst, kCount, row.data());
  for (std::int64_t i = 0; i < kCount; ++i) {
    auto e = static_cast<std::size_t>(i);
    CHECK(scaled[e] == (i < kFirst ? 0.0f : values[e] * 0.125f));
  }

  ChainProgram writes_row = reads_row;
  writes_row.row_register = -1;
  writes_row.direct[0] = values.data();
  writes_row.stores.clear();
  writes_row.row_result = 2;
  std::fill(row.begin(), row.end(), 0.0f);
  CompiledChain::compile(writes_row, kCount, kFirst).value().run_on_row(kFirst, kCount, row.data());
  for (std::int64_t i = kFirst; i < kCount; ++i)
    CHECK(row[static_cast<std::size_t>(i - kFirst)] ==
          values[static_cast<std::size_t>(i)] * 0.125f);
}

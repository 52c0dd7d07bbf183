// Chain programs compiled to AVX-512 and AVX2 code (runtime/compiled_chain.hpp) against the
// interpreter (a kernel set's run_chain_program), bit for bit: random programs of every
// instruction, load, broadcast, store and sum, on special values, over element counts with and
// without a last partial vector (which AVX2's code leaves to the interpreter, as the runtime's
// callers do) and in parts as a team runs them; the 16-bit conversions on every rounding case and
// every 16-bit value; and the programs the generator leaves to the interpreter. Each code runs
// where the CPU runs the avx512 or the avx2 set; elsewhere these tests check only what is refused.

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
#include <tuple>
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

using runtime::ChainIsa;

// The code this CPU runs, each with the kernel set whose interpreter it is compared with.
struct CodeHere {
  ChainIsa isa;
  const runtime::KernelSet* interpreter;
  int lanes;
};

std::vector<CodeHere> codes_here() {
  std::vector<std::string_view> sets = runtime::runnable_kernel_sets();
  std::vector<CodeHere> codes;
  for (auto [isa, name, lanes] :
       {std::tuple{ChainIsa::avx512, "avx512", 16}, std::tuple{ChainIsa::avx2, "avx2", 8}}) {
    if (std::find(sets.begin(), sets.end(), name) != sets.end())
      codes.push_back({isa, &runtime::kernel_set(name), lanes});
  }
  return codes;
}

// Elements [first, last) as the runtime runs them: the compiled code, then the interpreter for
// what it leaves.
void run_compiled(const CompiledChain& compiled, const CodeHere& code, const ChainProgram& program,
                  std::int64_t first, std::int64_t last, double* sums) {
  std::vector<float> registers(static_cast<std::size_t>(program.registers) * runtime::kChainLanes);
  std::int64_t start = compiled.run(first, last, sums);
  if (start < last)
    code.interpreter->run_chain_program(program, registers.data(), start, last, sums);
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
  // At most `max_values` registers and `max_sums` sums (whose lanes take vector registers too),
  // broadcast rows of a multiple of `lanes` elements. A `wide` one reads more operands in place
  // and more single values, and computes fewer: more registers than the vector registers hold
  // in all, those read from memory left aside.
  struct Shape {
    int max_values;
    int max_sums;
    int lanes;
    bool wide = false;
  };

  RandomChain(std::mt19937& random, std::int64_t count, Shape shape)
      : random_(random), count_(count), max_values_(shape.max_values), lanes_(shape.lanes) {
    buffers_.reserve(64);  // the program holds pointers into them
    int direct = pick(1, shape.wide ? max_values_ / 3 : 3);
    for (int d = 0; d < direct; ++d)
      add_direct();
    int loads = pick(1, shape.wide ? max_values_ / 2 : 5);
    for (int l = 0; l < loads; ++l)
      add_load(shape.wide && pick(0, 3) > 0);
    int instructions = shape.wide ? pick(2, max_values_ / 3) : pick(3, 14);
    for (int i = 0; i < instructions && registers() < max_values_; ++i)
      add_instruction();
    int stores = pick(1, 4);
    for (int s = 0; s < stores; ++s)
      add_store();
    // Sums of computed values, as a chain sums them.
    if (count % runtime::kSumLanes == 0) {
      int sums = pick(0, shape.max_sums);
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

  // Element for element, one value for every element (or, `single`, an f32 one), a row of a whole
  // number of vectors repeated, or one value a row of a whole number of vectors.
  void add_load(bool single) {
    DType dtype = single ? DType::f32 : random_dtype(true);
    graph::FlatBroadcast how;
    std::int64_t elements = count_;
    switch (single ? 1 : pick(0, 3)) {
      case 0:
        how.period = count_;
        break;
      case 1:
        elements = 1;
        break;
      case 2:
        how.period = lanes_ * pick(1, 4);
        elements = how.period;
        break;
      default:
        how.repeat = lanes_ * pick(1, 3);
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
  int max_values_;
  int lanes_;
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
  if (codes_here().empty()) {
    SUCCEED("this CPU runs neither AVX2 nor AVX-512 code: chains are interpreted");
    return;
  }
  const std::int64_t counts[] = {1, 7, 15, 16, 17, 40, 100, 4096, 4096 + 24, 3 * 4096 + 8, 9999};
  for (const CodeHere& code : codes_here()) {
    bool avx512 = code.isa == ChainIsa::avx512;
    // As many values as the vector registers hold beside the temporaries and two sums' lanes
    // (AVX-512), or one's (AVX2: each takes two of its sixteen); and wide programs, more than
    // they hold, those read from memory aside.
    for (RandomChain::Shape shape :
         {RandomChain::Shape{avx512 ? 24 : 9, avx512 ? 2 : 1, code.lanes},
          RandomChain::Shape{avx512 ? 48 : 24, 1, code.lanes, true}}) {
      INFO(runtime::chain_isa_name(code.isa)
           << " code, " << (shape.wide ? "wide " : "") << "programs");
      std::mt19937 random(20261205);
      int compiled_programs = 0;
      int beyond_registers = 0;
      for (int trial = 0; trial < 400; ++trial) {
        std::int64_t count = counts[static_cast<std::size_t>(trial) % std::size(counts)];
        RandomChain chain(random, count, shape);
        std::string why_not =
            CompiledChain::why_not(chain.program(), count, runtime::kSumChunk, code.isa);
        INFO("trial " << trial << ", " << count << " elements: " << why_not);
        std::optional<CompiledChain> compiled =
            CompiledChain::compile(chain.program(), count, runtime::kSumChunk, code.isa);
        if (shape.wide && !compiled) {
          CHECK_THAT(why_not, Catch::Contains("beside those it reads from memory"));
          continue;
        }
        REQUIRE(compiled.has_value());
        ++compiled_programs;
        // The registers all values fit in: 32 (AVX-512) or 16 (AVX2) less the 5 temporaries and
        // the sums' lanes.
        auto sums = static_cast<int>(chain.program().sums.size());
        int all_fit = avx512 ? 27 - sums : 11 - 2 * sums;
        beyond_registers += chain.program().registers > all_fit;
        std::vector<float> registers = interpreter_registers(chain.program());
        RandomChain::Result interpreted = chain.run([&](std::int64_t first, std::int64_t last,
                                                        double* sums) {
          code.interpreter->run_chain_program(chain.program(), registers.data(), first, last, sums);
        });
        RandomChain::Result ran =
            chain.run([&](std::int64_t first, std::int64_t last, double* sums) {
              run_compiled(*compiled, code, chain.program(), first, last, sums);
            });
        std::string found = differences(interpreted, ran, chain);
        INFO(found);
        CHECK(found.empty());
      }
      if (!shape.wide) {
        CHECK(compiled_programs == 400);
        continue;
      }
      INFO(compiled_programs << " compiled, " << beyond_registers << " beyond the registers");
      CHECK(beyond_registers >= 100);
    }
  }
}

TEST_CASE("compiled chains round to 16 bits and widen bit for bit as the scalar conversions do") {
  if (codes_here().empty()) {
    SUCCEED("this CPU runs neither AVX2 nor AVX-512 code: chains are interpreted");
    return;
  }
  std::vector<float> values = test::rounding_patterns();
  auto count = static_cast<std::int64_t>(values.size());
  std::vector<std::uint16_t> every_half(0x10000);
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits)
    every_half[bits] = static_cast<std::uint16_t>(bits);
  for (const CodeHere& code : codes_here()) {
    for (DType dtype : {DType::bf16, DType::f16, DType::cb16}) {
      INFO(runtime::chain_isa_name(code.isa) << " code, " << graph::dtype_name(dtype));
      // Stored narrowed, and narrowed in a register (the 16-bit value as f32).
      ChainProgram narrowing;
      narrowing.registers = 2;
      narrowing.direct = {values.data(), nullptr};
      narrowing.instructions.push_back({ChainCode::narrow, dtype, 1, 0, 0, 0});
      std::vector<std::uint16_t> stored(values.size());
      std::vector<float> in_register(values.size());
      narrowing.stores.push_back({0, reinterpret_cast<std::byte*>(stored.data()), dtype});
      narrowing.stores.push_back({1, reinterpret_cast<std::byte*>(in_register.data()), DType::f32});
      // Whole vectors only: what the compiled code computes.
      std::int64_t whole = CompiledChain::compile(narrowing, count, count, code.isa)
                               .value()
                               .run(0, count / code.lanes * code.lanes, nullptr);
      REQUIRE(whole == count / code.lanes * code.lanes);
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < static_cast<std::size_t>(whole); ++i) {
        std::uint16_t expected = runtime::narrow_to_half(values[i], dtype);
        mismatches += stored[i] != expected;
        mismatches += std::bit_cast<std::uint32_t>(in_register[i]) !=
                      std::bit_cast<std::uint32_t>(runtime::widen_from_half(expected, dtype));
      }
      CHECK(mismatches == 0);

      ChainProgram widening;
      widening.registers = 1;
      graph::FlatBroadcast all;
      all.period = 0x10000;
      widening.loads.push_back(
          {0, reinterpret_cast<const std::byte*>(every_half.data()), dtype, all});
      std::vector<float> widened(every_half.size());
      widening.stores.push_back({0, reinterpret_cast<std::byte*>(widened.data()), DType::f32});
      CHECK(CompiledChain::compile(widening, 0x10000, 0x10000, code.isa)
                .value()
                .run(0, 0x10000, nullptr) == 0x10000);
      mismatches = 0;
      for (std::size_t bits = 0; bits < every_half.size(); ++bits) {
        mismatches +=
            std::bit_cast<std::uint32_t>(widened[bits]) !=
            std::bit_cast<std::uint32_t>(runtime::widen_from_half(every_half[bits], dtype));
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE(
    "AVX2 code leaves the elements short of a vector to the interpreter, AVX-512 masks them") {
  std::vector<float> values(13, 4.0f);
  std::vector<float> roots(13, -1.0f);
  ChainProgram program;
  program.registers = 2;
  program.direct = {values.data(), nullptr};
  program.instructions.push_back({ChainCode::sqrt, DType::f32, 1, 0, 0, 0});
  program.stores.push_back({1, reinterpret_cast<std::byte*>(roots.data()), DType::f32});
  for (const CodeHere& code : codes_here()) {
    INFO(runtime::chain_isa_name(code.isa) << " code");
    std::fill(roots.begin(), roots.end(), -1.0f);
    std::int64_t stopped =
        CompiledChain::compile(program, 13, 13, code.isa).value().run(0, 13, nullptr);
    std::int64_t expected = code.isa == ChainIsa::avx2 ? 8 : 13;
    CHECK(stopped == expected);
    for (std::int64_t i = 0; i < 13; ++i)
      CHECK(roots[static_cast<std::size_t>(i)] == (i < expected ? 2.0f : -1.0f));
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
  const ChainIsa kAvx512 = ChainIsa::avx512;
  const ChainIsa kAvx2 = ChainIsa::avx2;
  CHECK(CompiledChain::why_not(simple, 64, 64, kAvx512).empty());
  CHECK(CompiledChain::why_not(simple, 64, 64, kAvx2).empty());
  CHECK(CompiledChain::why_not(simple, 64, 64, ChainIsa::none) ==
        "the kernel set runs neither AVX-512 nor AVX2 code");

  ChainProgram odd_rows = simple;
  graph::FlatBroadcast row;
  row.period = 24;  // a row of 24 elements: AVX-512's vectors would straddle rows
  odd_rows.registers = 3;
  odd_rows.direct.push_back(nullptr);
  odd_rows.loads.push_back({2, bytes, DType::f32, row});
  CHECK_THAT(CompiledChain::why_not(odd_rows, 64, 64, kAvx512),
             Catch::Contains("broadcasts an operand"));
  CHECK_FALSE(CompiledChain::compile(odd_rows, 64, 64, kAvx512).has_value());
  CHECK(CompiledChain::why_not(odd_rows, 64, 64, kAvx2).empty());  // three vectors of 8
  odd_rows.loads.back().how.period = 12;
  CHECK_THAT(CompiledChain::why_not(odd_rows, 64, 64, kAvx2),
             Catch::Contains("a row's value of a multiple of 8 elements"));

  // A row's value of an empty value's rows: nothing to count.
  ChainProgram no_rows = odd_rows;
  no_rows.loads.back().how = graph::FlatBroadcast{16, 0, 1, 1};
  CHECK_THAT(CompiledChain::why_not(no_rows, 0, 64, kAvx512),
             Catch::Contains("broadcasts an operand"));

  ChainProgram rows = odd_rows;
  rows.loads.back().how.period = 32;
  CHECK(CompiledChain::why_not(rows, 64, 64, kAvx512).empty());
  // A softmax's rows of 40: its runs would start inside a vector.
  CHECK(CompiledChain::why_not(rows, 64, 40, kAvx512) ==
        "it broadcasts rows, and its runs start every 40 elements, not at multiples of 16");
  CHECK(CompiledChain::why_not(rows, 64, 40, kAvx2).empty());
  CHECK(CompiledChain::why_not(rows, 64, 36, kAvx2) ==
        "it broadcasts rows, and its runs start every 36 elements, not at multiples of 8");

  ChainProgram odd_sum = simple;
  odd_sum.sums.push_back(1);
  CHECK(CompiledChain::why_not(odd_sum, 60, 4096, kAvx512) ==
        "it sums 60 elements, not a multiple of 8");
  CHECK(CompiledChain::why_not(odd_sum, 64, 4096, kAvx512).empty());

  // AVX-512: 32 vector registers less 5 for temporaries; AVX2: 16 less 5, less 2 a sum. Beyond
  // that, the operand read in place stays in memory and 3 more are temporaries for such operands.
  ChainProgram crowded = simple;
  crowded.registers = 28;
  crowded.direct.resize(28, nullptr);
  CHECK(CompiledChain::why_not(crowded, 64, 64, kAvx512) ==
        "it holds 27 values at once beside those it reads from memory, more than 24 vector "
        "registers");
  crowded.registers = 10;
  crowded.direct.resize(10, nullptr);
  CHECK(CompiledChain::why_not(crowded, 64, 64, kAvx2).empty());
  crowded.sums.push_back(1);
  CHECK(CompiledChain::why_not(crowded, 64, 64, kAvx2) ==
        "it holds 9 values at once beside those it reads from memory, more than 6 vector "
        "registers");
  // Seven single f32 values and four operands read in place, as an AdamW update reads them, and
  // five others: AVX2 keeps the eleven in memory.
  ChainProgram update = simple;
  update.registers = 16;
  update.direct.assign(16, nullptr);
  for (std::size_t reg : {1, 3, 7, 9})
    update.direct[reg] = values.data();
  for (std::int32_t reg : {0, 2, 4, 5, 6, 8, 10})
    update.loads.push_back({reg, bytes, DType::f32, graph::FlatBroadcast{}});
  CHECK(CompiledChain::why_not(update, 64, 64, kAvx2).empty());

  for (const CodeHere& code : codes_here()) {
    INFO(runtime::chain_isa_name(code.isa) << " code");
    std::int64_t first = code.lanes / 2;
    CHECK_THROWS_WITH(
        CompiledChain::compile(rows, 64, 64, code.isa).value().run(first, 64, nullptr),
        "a compiled chain that broadcasts rows runs from a multiple of " +
            std::to_string(code.lanes) + " elements, not from element " + std::to_string(first));
  }
}

TEST_CASE("a compiled row chain reads and writes the caller's row buffer") {
  if (codes_here().empty()) {
    SUCCEED("this CPU runs neither AVX2 nor AVX-512 code: chains are interpreted");
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
  for (const CodeHere& code : codes_here()) {
    INFO(runtime::chain_isa_name(code.isa) << " code");
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
    // 80 elements: whole vectors of either code.
    CHECK(CompiledChain::compile(reads_row, kCount, kFirst, code.isa)
              .value()
              .run_on_row(kFirst, kCount, row.data()) == kCount);
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
    CHECK(CompiledChain::compile(writes_row, kCount, kFirst, code.isa)
              .value()
              .run_on_row(kFirst, kCount, row.data()) == kCount);
    for (std::int64_t i = kFirst; i < kCount; ++i)
      CHECK(row[static_cast<std::size_t>(i - kFirst)] ==
            values[static_cast<std::size_t>(i)] * 0.125f);
  }
}

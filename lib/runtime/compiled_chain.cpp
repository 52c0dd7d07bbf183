#include "compiled_chain.hpp"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <map>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "full_sum.hpp"
#include "graph/types.hpp"
#include "half_precision.hpp"
#include "transcendental.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;
using Xbyak::Xmm;
using Xbyak::Ymm;
using Xbyak::Zmm;

// Elements [first, last); with sums, each sum's eight lanes (kSumLanes doubles a sum) at `lanes`;
// with a row register or row result, the caller's row buffer of those elements at `row`.
using ChainFunction = void (*)(std::int64_t first, std::int64_t last, double* lanes, float* row);

// The last five vector registers: the temporaries of conversions and of instructions that take
// two steps.
constexpr int kScratchRegisters = 5;
constexpr std::size_t kPageBytes = 4096;

int vector_lanes(ChainIsa isa) {
  return isa == ChainIsa::avx512 ? 16 : 8;
}

int vector_registers(ChainIsa isa) {
  return isa == ChainIsa::avx512 ? 32 : 16;
}

// The registers a sum's eight double lanes take: one zmm, or two ymm.
int sum_registers(ChainIsa isa) {
  return isa == ChainIsa::avx512 ? 1 : 2;
}

// Where a program's registers live in the code. Each has a vector register of its own while
// they fit ("pinned"); where they do not (AVX2's sixteen fill fast: an AdamW update reads seven
// scalars and four whole operands), the whole f32 operands read in place and the f32 single
// values stay in memory, read into one of kOperandRegisters temporaries by each instruction,
// store or sum that reads them, and only the others take vector registers.
constexpr int kOperandRegisters = 3;

struct RegisterLayout {
  std::vector<bool> in_memory;  // per program register
  std::vector<int> vector;      // per program register with a vector register: its index
  int needed = 0;               // vector registers the program's registers take
  int available = 0;            // those the code has for them
  bool reads_memory = false;

  bool fits() const { return needed <= available; }
};

RegisterLayout register_layout(const ChainProgram& program, ChainIsa isa) {
  RegisterLayout layout;
  auto registers = static_cast<std::size_t>(program.registers);
  int for_values = vector_registers(isa) - kScratchRegisters -
                   static_cast<int>(program.sums.size()) * sum_registers(isa);
  layout.in_memory.assign(registers, false);
  layout.available = for_values;
  if (program.registers > for_values) {
    layout.reads_memory = true;
    layout.available = for_values - kOperandRegisters;
    for (std::size_t reg = 0; reg < program.direct.size() && reg < registers; ++reg)
      layout.in_memory[reg] = program.direct[reg] != nullptr;
    for (const ChainLoad& load : program.loads) {
      if (load.single() && load.dtype == DType::f32)
        layout.in_memory[static_cast<std::size_t>(load.reg)] = true;
    }
  }
  layout.vector.assign(registers, -1);
  for (std::size_t reg = 0; reg < registers; ++reg) {
    if (!layout.in_memory[reg]) layout.vector[reg] = layout.needed++;
  }
  return layout;
}

bool element_for_element(const graph::FlatBroadcast& how, std::int64_t count) {
  return how.repeat == 1 && how.outer_period == 1 && how.period == count;
}

// A broadcast the loop follows with counters: a row of `period` elements repeated (repeat 1), or
// one value a row, `repeat` elements long, of `period` rows (a row's statistic). Each vector then
// reads within one row: a whole number of vectors a row, and vectors start at a multiple of
// `lanes`.
bool counted_broadcast(const graph::FlatBroadcast& how, int lanes) {
  if (how.outer_period != 1 || how.period < 1 || how.repeat < 1) return false;
  if (how.repeat == 1) return how.period % lanes == 0;
  return how.repeat % lanes == 0;
}

bool loaded_by_counters(const ChainLoad& load, std::int64_t count) {
  return !load.single() && !element_for_element(load.how, count);
}

// The general-purpose registers the counters take, each saved on entry: a repeated row takes one
// (the element in the row), a row's statistic two (the element in the row, the row).
const std::array<Xbyak::Reg64, 6> kCounterRegisters = {Xbyak::util::rbx, Xbyak::util::rbp,
                                                       Xbyak::util::r12, Xbyak::util::r13,
                                                       Xbyak::util::r14, Xbyak::util::r15};

int counter_registers(const graph::FlatBroadcast& how) {
  return how.repeat == 1 ? 1 : 2;
}

// The distinct broadcasts the loop follows with counters, and the registers they take.
std::vector<graph::FlatBroadcast> counted_broadcasts(const ChainProgram& program,
                                                     std::int64_t count) {
  std::vector<graph::FlatBroadcast> distinct;
  for (const ChainLoad& load : program.loads) {
    if (!loaded_by_counters(load, count)) continue;
    bool seen = std::any_of(distinct.begin(), distinct.end(), [&](const graph::FlatBroadcast& how) {
      return how.repeat == load.how.repeat && how.period == load.how.period;
    });
    if (!seen) distinct.push_back(load.how);
  }
  return distinct;
}

int counter_registers(std::span<const graph::FlatBroadcast> broadcasts) {
  int registers = 0;
  for (const graph::FlatBroadcast& how : broadcasts)
    registers += counter_registers(how);
  return registers;
}

bool stored_type(DType dtype) {
  return dtype == DType::f32 || dtype == DType::boolean || graph::is_half(dtype);
}

// One 16-bit format's constants, as half_precision.hpp's Format and its conversions use them.
struct HalfConstants {
  int mantissa_bits;
  int bias;
  std::uint32_t exponent_mask;
  std::uint32_t quiet_nan;
  bool signed_nan;

  int shift() const { return 23 - mantissa_bits; }
  std::uint32_t subnormal_magic() const {
    return static_cast<std::uint32_t>(151 - bias - mantissa_bits) << 23;
  }
};

HalfConstants half_constants(DType dtype) {
  return half_format::with_format(dtype, [](auto format) {
    using F = decltype(format);
    return HalfConstants{F::mantissa_bits, F::bias, F::exponent_mask, F::quiet_nan, F::signed_nan};
  });
}

// vcmpps predicates: false for NaN but not_equal's, which C++'s != makes true.
constexpr std::uint8_t kEqual = 0x00;
constexpr std::uint8_t kUnordered = 0x03;
constexpr std::uint8_t kNotEqual = 0x04;
constexpr std::uint8_t kLess = 0x11;
constexpr std::uint8_t kLessEqual = 0x12;
constexpr std::uint8_t kGreaterEqual = 0x1D;
constexpr std::uint8_t kGreater = 0x1E;
// vpcmpud predicates.
constexpr std::uint8_t kUnsignedLess = 1;
constexpr std::uint8_t kUnsignedNotLess = 5;
constexpr std::uint8_t kUnsignedGreater = 6;

constexpr std::uint32_t kOne = 0x3F800000u;  // 1.0f

// Whether an instruction reads its second operand (where reads a third too).
bool reads_b(ChainCode code) {
  switch (code) {
    case ChainCode::is_finite:
    case ChainCode::logical_not:
    case ChainCode::neg:
    case ChainCode::abs:
    case ChainCode::relu:
    case ChainCode::sqrt:
    case ChainCode::rsqrt:
    case ChainCode::exp:
    case ChainCode::erf:
    case ChainCode::gelu:
    case ChainCode::sigmoid:
    case ChainCode::narrow:
    case ChainCode::copy:
      return false;
    default:
      return true;
  }
}

// The program as one loop of whole vectors: 16 elements a vector in AVX-512's zmm registers, or 8
// in AVX2's ymm. Program registers live where the RegisterLayout puts them, a sum's eight lanes in
// the one (zmm) or two (ymm) before the scratch registers. With AVX-512, k1 masks the elements left
// in the last vector and k2 and k3 are temporaries; AVX2 has no masks of its own, so its code takes
// whole vectors only (CompiledChain leaves the rest to the interpreter), and its comparisons
// give vectors of all-ones lanes that blends and ands use. rax is the element, rsi the last, r9
// the row buffer's base, r10 the sums' lanes, r8 and r11 temporaries; the counters take
// callee-saved registers.
class ChainEmitter : public Xbyak::CodeGenerator {
  // A counted broadcast's place at the loop's element: the element in its row, and for a row's
  // statistic the row.
  struct Counter {
    graph::FlatBroadcast how;
    Xbyak::Reg64 in_row;
    Xbyak::Reg64 row;
  };

 public:
  ChainEmitter(const ChainProgram& program, std::int64_t count, ChainIsa isa, std::size_t bytes)
      : CodeGenerator(bytes, Xbyak::DontSetProtectRWE),
        program_(program),
        count_(count),
        isa_(isa),
        lanes_(vector_lanes(isa)),
        layout_(register_layout(program, isa)) {
    std::size_t next = 0;
    for (const graph::FlatBroadcast& how : counted_broadcasts(program, count)) {
      Counter counter{how, kCounterRegisters[next], kCounterRegisters[next]};
      if (how.repeat > 1) counter.row = kCounterRegisters[next + 1];
      next += static_cast<std::size_t>(counter_registers(how));
      counters_.push_back(counter);
    }
    emit();
    ready();
    setProtectModeRE();
  }

 private:
  bool avx2() const { return isa_ == ChainIsa::avx2; }
  Xmm vector(int index) const {
    if (avx2()) return Ymm(index);
    return Zmm(index);
  }
  // The vector register of a program register that has one.
  Xmm home(std::int32_t reg) const { return vector(layout_.vector[static_cast<std::size_t>(reg)]); }
  bool in_memory(std::int32_t reg) const {
    return layout_.in_memory[static_cast<std::size_t>(reg)];
  }
  // A program register's value as an operand: its vector register, or, for one kept in memory,
  // the operand temporary `operand` (0-2), loaded now.
  Xmm read(std::int32_t reg, int operand) {
    if (!in_memory(reg)) return home(reg);
    Xmm temporary = vector(layout_.available + operand);
    if (const float* whole = program_.direct[static_cast<std::size_t>(reg)]) {
      emit_load_f32(temporary, whole);
      return temporary;
    }
    const ChainLoad& single =
        *std::find_if(program_.loads.begin(), program_.loads.end(),
                      [reg](const ChainLoad& load) { return load.reg == reg; });
    mov(r11, reinterpret_cast<std::uint64_t>(single.data));
    vbroadcastss(temporary, dword[r11]);
    return temporary;
  }
  // Part `part` of a sum's lanes: its zmm, or the ymm of its lanes 0-3 (part 0) or 4-7 (part 1).
  Xmm sum_lanes(std::size_t s, int part = 0) const {
    int first = vector_registers(isa_) - kScratchRegisters -
                static_cast<int>(program_.sums.size()) * sum_registers(isa_);
    return vector(first + static_cast<int>(s) * sum_registers(isa_) + part);
  }
  Xmm scratch(int index) const {
    return vector(vector_registers(isa_) - kScratchRegisters + index);
  }

  // A 32-bit constant in every lane, as a memory operand: one value AVX-512 broadcasts, or a
  // vector of them for AVX2.
  Xbyak::Address every_lane(std::uint32_t value) {
    if (avx2()) return ptr[rip + constants_[value]];
    return ptr_b[rip + constants_[value]];
  }
  Xbyak::Address one_lane(std::uint32_t value) { return dword[rip + constants_[value]]; }
  Xbyak::Address every_lane_f32(float value) {
    return every_lane(std::bit_cast<std::uint32_t>(value));
  }
  void broadcast(const Xmm& out, float value) {
    vbroadcastss(out, one_lane(std::bit_cast<std::uint32_t>(value)));
  }

  // Loads a 64-bit address into r11 and returns the element at the loop's index.
  Xbyak::RegExp element(const void* base, int element_bytes) {
    mov(r11, reinterpret_cast<std::uint64_t>(base));
    return r11 + rax * element_bytes;
  }

  // The loop takes whole vectors without masks (masked stores and narrowing stores are slow on
  // some CPUs), then, with AVX-512, the last few elements, if any, under k1.
  void emit() {
    Xbyak::Label loop;
    Xbyak::Label tail;
    Xbyak::Label done;
    for (const Counter& counter : counters_) {
      push(counter.in_row);
      if (counter.how.repeat > 1) push(counter.row);
    }
    mov(r10, rdx);
    // r9: the row buffer less `first` elements, so that the element at the loop's index is there.
    mov(r9, rcx);
    mov(rax, rdi);
    shl(rax, 2);
    sub(r9, rax);
    for (const Counter& counter : counters_)
      start_counter(counter);
    for (const ChainLoad& load : program_.loads) {
      if (load.single() && !in_memory(load.reg)) emit_single(load);
    }
    for (std::size_t s = 0; s < program_.sums.size(); ++s) {
      for (int part = 0; part < sum_registers(isa_); ++part)
        vxorpd(sum_lanes(s, part), sum_lanes(s, part), sum_lanes(s, part));
    }
    mov(rax, rdi);
    L(loop);
    mov(r8, rsi);
    sub(r8, rax);
    cmp(r8, lanes_);
    jl(tail, T_NEAR);
    emit_vector(false);
    add(rax, lanes_);
    for (const Counter& counter : counters_)
      advance_counter(counter);
    jmp(loop, T_NEAR);
    L(tail);
    if (!avx2()) emit_masked_tail(done);
    L(done);
    store_sums();
    for (auto counter = counters_.rbegin(); counter != counters_.rend(); ++counter) {
      if (counter->how.repeat > 1) pop(counter->row);
      pop(counter->in_row);
    }
    vzeroupper();
    ret();
    emit_constants();
  }

  void emit_masked_tail(const Xbyak::Label& done) {
    test(r8, r8);
    jle(done, T_NEAR);
    mov(r11d, 0xFFFFFFFF);
    bzhi(r11d, r11d, r8d);
    kmovw(k1, r11d);
    emit_vector(true);
  }

  void store_sums() {
    for (std::size_t s = 0; s < program_.sums.size(); ++s) {
      auto at = static_cast<int>(s * kSumLanes * sizeof(double));
      if (!avx2()) {
        vmovupd(ptr[r10 + at], sum_lanes(s));
        continue;
      }
      vmovupd(ptr[r10 + at], sum_lanes(s, 0));
      vmovupd(ptr[r10 + at + 32], sum_lanes(s, 1));
    }
  }

  // One vector's loads, instructions, stores and sums; `masked`: only the lanes k1 holds.
  void emit_vector(bool masked) {
    masked_ = masked;
    for (const ChainLoad& load : program_.loads) {
      if (!load.single()) emit_load(load);
    }
    for (std::size_t reg = 0; reg < program_.direct.size(); ++reg) {
      auto direct = static_cast<std::int32_t>(reg);
      if (program_.direct[reg] != nullptr && !in_memory(direct))
        emit_load_f32(home(direct), program_.direct[reg]);
    }
    if (program_.row_register >= 0) vmovups(loaded(home(program_.row_register)), ptr[r9 + rax * 4]);
    for (const ChainInstruction& instruction : program_.instructions)
      emit_instruction(instruction);
    for (const ChainStore& store : program_.stores)
      emit_store(store);
    if (program_.row_result >= 0) {
      Xbyak::Address row = ptr[r9 + rax * 4];
      vmovups(masked_ ? row | k1 : row, read(program_.row_result, 0));
    }
    for (std::size_t s = 0; s < program_.sums.size(); ++s)
      emit_sum(s);
  }

  Xmm loaded(const Xmm& out) const { return masked_ ? out | k1 | T_z : out; }

  void emit_load_f32(const Xmm& out, const void* base) {
    vmovups(loaded(out), ptr[element(base, 4)]);
  }

  // The counters at element `first` (rdi): (first / repeat) % period and first % repeat for a
  // row's statistic, first % period for a repeated row.
  void start_counter(const Counter& counter) {
    const graph::FlatBroadcast& how = counter.how;
    mov(rax, rdi);
    xor_(edx, edx);
    mov(rcx, how.repeat == 1 ? how.period : how.repeat);
    div(rcx);
    mov(counter.in_row, rdx);
    if (how.repeat == 1) return;
    xor_(edx, edx);
    mov(rcx, how.period);
    div(rcx);
    mov(counter.row, rdx);
  }

  // The counters at the next vector's first element.
  void advance_counter(const Counter& counter) {
    const graph::FlatBroadcast& how = counter.how;
    xor_(r8d, r8d);
    add(counter.in_row, lanes_);
    if (how.repeat == 1) {
      cmp(counter.in_row, how.period);
      cmovae(counter.in_row, r8);
      return;
    }
    Xbyak::Label same_row;
    cmp(counter.in_row, how.repeat);
    jb(same_row, T_NEAR);
    xor_(counter.in_row, counter.in_row);
    inc(counter.row);
    cmp(counter.row, how.period);
    cmovae(counter.row, r8);
    L(same_row);
  }

  // A counted broadcast's vector: a vector of elements of its row, or its row's one value in
  // every lane.
  void emit_counted_load(const ChainLoad& load) {
    const Counter& counter = counter_of(load.how);
    Xmm out = home(load.reg);
    int bytes = load.dtype == DType::f32 ? 4 : graph::is_half(load.dtype) ? 2 : 1;
    mov(r11, reinterpret_cast<std::uint64_t>(load.data));
    if (load.how.repeat == 1) {
      Xbyak::Address at = ptr[r11 + counter.in_row * bytes];  // a vector of the row's elements
      if (load.dtype == DType::f32) return vmovups(loaded(out), at);
      if (graph::is_half(load.dtype)) {
        vpmovzxwd(loaded(out), at);
        return widen(load.dtype, out, out);
      }
      vpmovzxbd(loaded(out), at);
      return truth_of_nonzero_bits(out);
    }
    broadcast_element(load.dtype, out, r11 + counter.row * bytes);
  }

  // One stored element of `dtype` as an f32 value in every lane.
  void broadcast_element(DType dtype, const Xmm& out, const Xbyak::RegExp& at) {
    if (dtype == DType::f32) return vbroadcastss(out, dword[at]);
    if (graph::is_half(dtype)) {
      movzx(r8d, word[at]);
      broadcast_r8d(out);
      return widen(dtype, out, out);
    }
    movzx(r8d, byte[at]);
    broadcast_r8d(out);
    truth_of_nonzero_bits(out);
  }

  void broadcast_r8d(const Xmm& out) {
    if (!avx2()) return vpbroadcastd(out, r8d);
    vmovd(Xmm(out.getIdx()), r8d);
    vpbroadcastd(out, Xmm(out.getIdx()));
  }

  void emit_single(const ChainLoad& load) {
    mov(r11, reinterpret_cast<std::uint64_t>(load.data));
    broadcast_element(load.dtype, home(load.reg), r11);
  }

  void emit_load(const ChainLoad& load) {
    if (loaded_by_counters(load, count_)) return emit_counted_load(load);
    Xmm out = home(load.reg);
    if (load.dtype == DType::f32) return emit_load_f32(out, load.data);
    if (graph::is_half(load.dtype)) {
      vpmovzxwd(loaded(out), ptr[element(load.data, 2)]);
      return widen(load.dtype, out, out);
    }
    vpmovzxbd(loaded(out), ptr[element(load.data, 1)]);
    truth_of_nonzero_bits(out);
  }

  // 1.0f in the lanes whose bits are not all zero (a boolean's byte), 0.0f in the others.
  void truth_of_nonzero_bits(const Xmm& value) {
    if (!avx2()) {
      vptestmd(k2, value, value);
      return vbroadcastss(value | k2 | T_z, one_lane(kOne));
    }
    Xmm zero = scratch(4);
    vpxor(zero, zero, zero);
    vpcmpeqd(zero, zero, value);
    vandnps(value, zero, every_lane(kOne));
  }

  void truth_of(const Xmm& out, const Xmm& a, const Xbyak::Operand& b, std::uint8_t predicate) {
    if (!avx2()) {
      vcmpps(k2, a, b, predicate);
      return vbroadcastss(out | k2 | T_z, one_lane(kOne));
    }
    vcmpps(out, a, b, predicate);
    vandps(out, out, every_lane(kOne));
  }

  void emit_instruction(const ChainInstruction& instruction) {
    Xmm out = home(instruction.out);
    Xmm a = read(instruction.a, 0);
    Xmm b = reads_b(instruction.code) ? read(instruction.b, 1) : a;
    switch (instruction.code) {
      case ChainCode::add:
        return vaddps(out, a, b);
      case ChainCode::sub:
        return vsubps(out, a, b);
      case ChainCode::mul:
        return vmulps(out, a, b);
      case ChainCode::div:
        return vdivps(out, a, b);
      case ChainCode::maximum:
        // std::max(a, b) is b where a < b, else a: vmaxps takes its first operand where it is the
        // greater. NaN from either operand: a + b.
        vmaxps(out, b, a);
        return nan_sum(out, a, b);
      case ChainCode::minimum:
        vminps(out, b, a);
        return nan_sum(out, a, b);
      case ChainCode::less:
        return truth_of(out, a, b, kLess);
      case ChainCode::less_equal:
        return truth_of(out, a, b, kLessEqual);
      case ChainCode::greater:
        return truth_of(out, a, b, kGreater);
      case ChainCode::greater_equal:
        return truth_of(out, a, b, kGreaterEqual);
      case ChainCode::equal:
        return truth_of(out, a, b, kEqual);
      case ChainCode::not_equal:
        return truth_of(out, a, b, kNotEqual);
      case ChainCode::is_finite:
        return is_finite(out, a);
      case ChainCode::logical_not:
        return truth_of(out, a, every_lane(0), kEqual);
      case ChainCode::neg:
        return xor_bits(out, a, 0x80000000u);
      case ChainCode::abs:
        return and_bits(out, a, 0x7FFFFFFFu);
      case ChainCode::relu:
        return relu(out, a);
      case ChainCode::sqrt:
        return vsqrtps(out, a);
      case ChainCode::rsqrt:
        vsqrtps(scratch(4), a);
        vbroadcastss(out, one_lane(kOne));
        return vdivps(out, out, scratch(4));
      case ChainCode::exp:
        return exp(out, a);
      case ChainCode::erf:
        return erf(out, a);
      case ChainCode::gelu:
        return gelu(out, a);
      case ChainCode::sigmoid:
        return sigmoid(out, a);
      case ChainCode::where:
        return where(out, a, b, read(instruction.c, 2));
      case ChainCode::narrow:
        narrow(instruction.format, out, a);
        return widen(instruction.format, out, out);
      case ChainCode::copy:
        return vmovaps(out, a);
    }
  }

  // |a| below infinity's bits (as integers: magnitudes are below 2^31, so AVX2's signed
  // comparison of them is the unsigned one).
  void is_finite(const Xmm& out, const Xmm& a) {
    Xmm magnitude = scratch(4);
    if (!avx2()) {
      vpandd(magnitude, a, every_lane(0x7FFFFFFFu));
      vpcmpud(k2, magnitude, every_lane(0x7F800000u), kUnsignedLess);
      return vbroadcastss(out | k2 | T_z, one_lane(kOne));
    }
    vpand(magnitude, a, every_lane(0x7FFFFFFFu));
    vmovups(out, every_lane(0x7F800000u));
    vpcmpgtd(out, out, magnitude);
    vandps(out, out, every_lane(kOne));
  }

  // a <= 0 ? 0 : a, so NaN stays and -0 becomes +0.
  void relu(const Xmm& out, const Xmm& a) {
    if (!avx2()) {
      vcmpps(k2, a, every_lane(0), kLessEqual);
      knotw(k2, k2);
      return vmovaps(out | k2 | T_z, a);
    }
    vcmpps(scratch(4), a, every_lane(0), kLessEqual);
    vandnps(out, scratch(4), a);
  }

  // transcendental.hpp's exp, operation for operation: `out` from `a`, neither a scratch register
  // (they may be the same one: `a` is read before `out` is written).
  void exp(const Xmm& out, const Xmm& a) {
    using namespace transcendental;
    Xmm x = scratch(0);
    Xmm m = scratch(1);
    Xmm r = scratch(2);
    Xmm y = scratch(3);
    Xmm other = scratch(4);
    hold(x, a, kExpLowest, kExpHighest, m);
    broadcast(m, kLog2e);
    vfmadd213ps(m, x, every_lane_f32(0.5f));
    floor(m);
    vmovaps(r, x);
    vfmadd231ps(r, m, every_lane_f32(-kLn2High));
    vfmadd231ps(r, m, every_lane_f32(-kLn2Low));
    horner(y, r, kExpPolynomial);
    vmulps(other, r, r);
    vfmadd213ps(y, other, r);
    vaddps(y, y, every_lane(kOne));
    scale(out, y, m);
  }

  // y 2^m, rounded once: AVX-512's scalef, or AVX2's two exact powers of two as
  // transcendental.cpp's.
  void scale(const Xmm& out, const Xmm& y, const Xmm& m) {
    using namespace transcendental;
    if (!avx2()) return vscalefps(out, y, m);
    Xmm first = scratch(4);
    vaddps(m, m, every_lane_f32(kExponentShifter));
    vpsubd(m, m, every_lane_f32(kExponentShifter));
    vpsrad(first, m, 1);
    vpsubd(m, m, first);
    power_of_two(first);
    vmulps(y, y, first);
    power_of_two(m);
    vmulps(out, y, m);
  }

  // transcendental.hpp's erf, operation for operation; `in` may be scratch(4).
  void erf(const Xmm& out, const Xmm& in) {
    using namespace transcendental;
    Xmm x = scratch(0);
    Xmm square = scratch(1);
    Xmm p = scratch(2);
    Xmm q = scratch(3);
    hold(x, in, -kErfLimit, kErfLimit, square);
    vmulps(square, x, x);
    horner(p, square, kErfNumerator);
    horner(q, square, kErfDenominator);
    vdivps(p, p, q);
    vmulps(out, p, x);
  }

  // (0.5 a) (1 + erf(a / sqrt(2))), as transcendental.hpp's gelu.
  void gelu(const Xmm& out, const Xmm& a) {
    Xmm scaled = scratch(4);
    vmulps(scaled, a, every_lane_f32(transcendental::kInverseSqrt2));
    erf(out, scaled);
    vaddps(out, out, every_lane(kOne));
    vmulps(scaled, a, every_lane_f32(0.5f));
    vmulps(out, scaled, out);
  }

  // (a >= 0 ? 1 : e) / (1 + e) with e = exp(-|a|), as transcendental.hpp's sigmoid. exp reads
  // its operand before it writes its result, so -|a| and e share `out`.
  void sigmoid(const Xmm& out, const Xmm& a) {
    or_bits(out, a, 0x80000000u);
    exp(out, out);
    Xmm denominator = scratch(0);
    vaddps(denominator, out, every_lane(kOne));
    if (!avx2()) {
      vcmpps(k2, a, every_lane(0), kGreaterEqual);
      vbroadcastss(out | k2, one_lane(kOne));
    } else {
      vcmpps(scratch(1), a, every_lane(0), kGreaterEqual);
      vblendvps(out, out, every_lane(kOne), scratch(1));
    }
    vdivps(out, out, denominator);
  }

  // low > a ? low : a, then high < that ? high : that, in `out` (`spare` is overwritten): vmaxps
  // and vminps give their second operand where one is NaN, so NaN stays NaN.
  void hold(const Xmm& out, const Xmm& a, float low, float high, const Xmm& spare) {
    broadcast(spare, low);
    vmaxps(spare, spare, a);
    broadcast(out, high);
    vminps(out, out, spare);
  }

  void floor(const Xmm& value) {
    constexpr std::uint8_t kFloorQuietly = 0x09;  // round down, no precision exception
    if (avx2()) return vroundps(value, value, kFloorQuietly);
    vrndscaleps(value, value, kFloorQuietly);
  }

  // ((c0 x + c1) x + c2) x + ... in `out`, a fused multiply-add a coefficient.
  template <std::size_t N>
  void horner(const Xmm& out, const Xmm& x, const std::array<float, N>& coefficients) {
    broadcast(out, coefficients[0]);
    for (std::size_t i = 1; i < N; ++i)
      vfmadd213ps(out, x, every_lane_f32(coefficients[i]));
  }

  // The integer exponents in `exponent`'s lanes as the powers of two they stand for.
  void power_of_two(const Xmm& exponent) {
    vpaddd(exponent, exponent, every_lane(transcendental::kExponentBias));
    vpslld(exponent, exponent, transcendental::kMantissaBits);
  }

  // a != 0 ? b : c.
  void where(const Xmm& out, const Xmm& a, const Xmm& b, const Xmm& c) {
    if (!avx2()) {
      vcmpps(k2, a, every_lane(0), kNotEqual);
      return vblendmps(out | k2, c, b);
    }
    vcmpps(scratch(4), a, every_lane(0), kNotEqual);
    vblendvps(out, c, b, scratch(4));
  }

  void nan_sum(const Xmm& out, const Xmm& a, const Xmm& b) {
    if (!avx2()) {
      vcmpps(k2, a, b, kUnordered);
      return vaddps(out | k2, a, b);
    }
    vcmpps(scratch(4), a, b, kUnordered);
    vaddps(scratch(3), a, b);
    vblendvps(out, out, scratch(3), scratch(4));
  }

  void emit_store(const ChainStore& store) {
    Xmm value = read(store.reg, 0);
    if (store.dtype == DType::f32) {
      if (masked_) return vmovups(ptr[element(store.data, 4)] | k1, value);
      return vmovups(ptr[element(store.data, 4)], value);
    }
    if (graph::is_half(store.dtype)) return store_half(store, value);
    store_boolean(store, value);
  }

  void store_half(const ChainStore& store, const Xmm& value) {
    Xmm narrowed = scratch(4);
    narrow(store.dtype, narrowed, value);
    if (masked_) return vpmovdw(ptr[element(store.data, 2)] | k1, narrowed);
    if (!avx2()) {
      vpmovdw(Ymm(narrowed.getIdx()), narrowed);
      return vmovdqu32(ptr[element(store.data, 2)], Ymm(narrowed.getIdx()));
    }
    // The 16-bit encodings, below 2^16, survive packing with unsigned saturation.
    Xmm low(narrowed.getIdx());
    Xmm high(scratch(3).getIdx());
    vextracti128(high, Ymm(narrowed.getIdx()), 1);
    vpackusdw(low, low, high);
    vmovdqu(ptr[element(store.data, 2)], low);
  }

  // 1 where the value is not 0 (NaN included, as C++'s != has it), else 0, a byte each.
  void store_boolean(const ChainStore& store, const Xmm& value) {
    Xmm narrowed = scratch(4);
    if (!avx2()) {
      vcmpps(k2, value, every_lane(0), kNotEqual);
      vpbroadcastd(narrowed | k2 | T_z, one_lane(1));
      if (masked_) return vpmovdb(ptr[element(store.data, 1)] | k1, narrowed);
      vpmovdb(Xmm(narrowed.getIdx()), narrowed);
      return vmovdqu32(ptr[element(store.data, 1)], Xmm(narrowed.getIdx()));
    }
    vcmpps(narrowed, value, every_lane(0), kNotEqual);
    vpsrld(narrowed, narrowed, 31);
    Xmm low(narrowed.getIdx());
    Xmm high(scratch(3).getIdx());
    vextracti128(high, Ymm(narrowed.getIdx()), 1);
    vpackusdw(low, low, high);
    vpackuswb(low, low, low);
    vmovq(qword[element(store.data, 1)], low);
  }

  // Lane j of a sum's accumulator adds elements 8i + j in order, as ChunkSum does: a zmm vector's
  // first eight elements, then its last eight, each only where the element is below `last`; a
  // ymm vector's eight, four to each half of the lanes.
  void emit_sum(std::size_t s) {
    Xmm value = read(program_.sums[s], 0);
    if (avx2()) {
      vcvtps2pd(scratch(0), Xmm(value.getIdx()));
      vaddpd(sum_lanes(s, 0), sum_lanes(s, 0), scratch(0));
      vextractf128(Xmm(scratch(1).getIdx()), Ymm(value.getIdx()), 1);
      vcvtps2pd(scratch(0), Xmm(scratch(1).getIdx()));
      return vaddpd(sum_lanes(s, 1), sum_lanes(s, 1), scratch(0));
    }
    Xmm lanes = sum_lanes(s);
    vcvtps2pd(scratch(0), Ymm(value.getIdx()));
    vaddpd(masked_ ? lanes | k1 : lanes, lanes, scratch(0));
    if (masked_) kshiftrw(k3, k1, 8);
    vextractf64x4(Ymm(scratch(1).getIdx()), Zmm(value.getIdx()), 1);
    vcvtps2pd(scratch(0), Ymm(scratch(1).getIdx()));
    vaddpd(masked_ ? lanes | k3 : lanes, lanes, scratch(0));
  }

  // half_format::narrow: the 16-bit encodings of `in`'s lanes in `out`'s (zero-extended); `out`
  // may be scratch(4), not `in`.
  void narrow(DType dtype, const Xmm& out, const Xmm& in) {
    HalfConstants f = half_constants(dtype);
    Xmm magnitude = scratch(0);
    Xmm sign = scratch(1);
    Xmm encoded = scratch(2);
    and_bits(magnitude, in, 0x7FFFFFFFu);
    vpsrld(sign, in, 16);
    and_bits(sign, sign, 0x8000u);
    std::uint32_t rebias = static_cast<std::uint32_t>(127 - f.bias) << 23;
    vpsrld(encoded, magnitude, static_cast<std::uint8_t>(f.shift()));
    and_bits(encoded, encoded, 1);
    vpaddd(encoded, encoded, magnitude);
    vpaddd(encoded, encoded, every_lane((1u << (f.shift() - 1)) - 1u - rebias));
    vpsrld(encoded, encoded, static_cast<std::uint8_t>(f.shift()));
    vpminud(encoded, encoded, every_lane(f.exponent_mask));
    if (f.bias != 127) {
      Xmm subnormal = scratch(3);
      vaddps(subnormal, magnitude, every_lane(f.subnormal_magic()));
      vpsubd(subnormal, subnormal, every_lane(f.subnormal_magic()));
      // `out` holds the mask for now.
      keep_where_below(encoded, subnormal, magnitude,
                       static_cast<std::uint32_t>(128 - f.bias) << 23, out);
    }
    Xmm nan = scratch(3);
    if (avx2()) vpcmpgtd(nan, magnitude, every_lane(0x7F800000u));
    or_bits(out, encoded, sign);
    if (!avx2()) vpcmpud(k2, magnitude, every_lane(0x7F800000u), kUnsignedGreater);
    if (f.signed_nan) {
      // The magnitude is no longer read: it holds the NaN's encoding.
      or_bits(magnitude, sign, f.quiet_nan);
      if (avx2()) return vblendvps(out, out, magnitude, nan);
      return vmovdqa32(out | k2, magnitude);
    }
    if (avx2()) return vblendvps(out, out, every_lane(f.quiet_nan), nan);
    vpbroadcastd(out | k2, one_lane(f.quiet_nan));
  }

  // half_format::widen of the 16-bit encodings in `in`'s lanes; `in` may be `out`.
  void widen(DType dtype, const Xmm& out, const Xmm& in) {
    HalfConstants f = half_constants(dtype);
    if (f.bias == 127) return vpslld(out, in, static_cast<std::uint8_t>(f.shift()));
    Xmm magnitude = scratch(0);
    Xmm sign = scratch(1);
    Xmm special = scratch(2);
    Xmm subnormal = scratch(3);
    and_bits(sign, in, 0x8000u);
    vpslld(sign, sign, 16);
    and_bits(magnitude, in, 0x7FFFu);
    vpslld(special, magnitude, static_cast<std::uint8_t>(f.shift()));
    vpaddd(out, special, every_lane(static_cast<std::uint32_t>(127 - f.bias) << 23));
    or_bits(special, special, 0x7F800000u);
    vpaddd(subnormal, magnitude, every_lane(f.subnormal_magic()));
    vsubps(subnormal, subnormal, every_lane(f.subnormal_magic()));
    keep_where_below(out, subnormal, magnitude, 1u << f.mantissa_bits, scratch(4));
    keep_where_below(out, special, magnitude, f.exponent_mask, scratch(4), true);
    or_bits(out, out, sign);
  }

  // `value` := `replacement` in the lanes whose `magnitude` (below 2^31) is below `limit`, or with
  // `not_below`, in those at or above it. AVX2 holds the comparison in `mask`.
  void keep_where_below(const Xmm& value, const Xmm& replacement, const Xmm& magnitude,
                        std::uint32_t limit, const Xmm& mask, bool not_below = false) {
    if (!avx2()) {
      vpcmpud(k2, magnitude, every_lane(limit), not_below ? kUnsignedNotLess : kUnsignedLess);
      return vmovdqa32(value | k2, replacement);
    }
    if (not_below) {
      vpcmpgtd(mask, magnitude, every_lane(limit - 1));
    } else {
      vmovups(mask, every_lane(limit));
      vpcmpgtd(mask, mask, magnitude);
    }
    vblendvps(value, value, replacement, mask);
  }

  void and_bits(const Xmm& out, const Xmm& in, std::uint32_t bits) {
    if (avx2()) return vpand(out, in, every_lane(bits));
    vpandd(out, in, every_lane(bits));
  }

  void xor_bits(const Xmm& out, const Xmm& in, std::uint32_t bits) {
    if (avx2()) return vpxor(out, in, every_lane(bits));
    vpxord(out, in, every_lane(bits));
  }

  void or_bits(const Xmm& out, const Xmm& a, const Xmm& b) {
    if (avx2()) return vpor(out, a, b);
    vpord(out, a, b);
  }

  void or_bits(const Xmm& out, const Xmm& in, std::uint32_t bits) {
    if (avx2()) return vpor(out, in, every_lane(bits));
    vpord(out, in, every_lane(bits));
  }

  // Each constant once: a 32-bit value AVX-512 broadcasts, or eight of them for AVX2.
  void emit_constants() {
    align(32);
    int copies = avx2() ? lanes_ : 1;
    for (auto& [value, label] : constants_) {
      L(label);
      for (int copy = 0; copy < copies; ++copy)
        dd(value);
    }
  }

  const Counter& counter_of(const graph::FlatBroadcast& how) const {
    return *std::find_if(counters_.begin(), counters_.end(), [&](const Counter& counter) {
      return counter.how.repeat == how.repeat && counter.how.period == how.period;
    });
  }

  const ChainProgram& program_;
  std::int64_t count_;
  ChainIsa isa_;
  int lanes_;
  RegisterLayout layout_;
  std::vector<Counter> counters_;
  std::map<std::uint32_t, Xbyak::Label> constants_;
  bool masked_ = false;
};

// Enough for the longest code an instruction, load or store makes (a 16-bit conversion and a
// 64-bit address) twice (whole vectors and the last), the loop and the constants, in whole pages
// (the code's pages are made executable).
std::size_t code_bytes(const ChainProgram& program) {
  std::size_t parts = program.instructions.size() + program.loads.size() + program.stores.size() +
                      program.direct.size() + program.sums.size();
  std::size_t bytes = kPageBytes + 1024 * parts;
  return (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
}

}  // namespace

std::string_view chain_isa_name(ChainIsa isa) {
  switch (isa) {
    case ChainIsa::avx512:
      return "AVX-512";
    case ChainIsa::avx2:
      return "AVX2";
    case ChainIsa::none:
      break;
  }
  return "no";
}

struct CompiledChain::Code {
  Code(const ChainProgram& chain, std::int64_t count, ChainIsa isa)
      : program(chain),
        emitter(program, count, isa, code_bytes(program)),
        function(emitter.getCode<ChainFunction>()),
        sums(program.sums.size()),
        counts(!counted_broadcasts(program, count).empty()),
        isa(isa) {}

  ChainProgram program;
  ChainEmitter emitter;
  ChainFunction function;
  std::size_t sums;
  bool counts;  // whether it follows broadcasts with counters, which start at whole vectors
  ChainIsa isa;
};

std::string CompiledChain::why_not(const ChainProgram& program, std::int64_t count,
                                   std::int64_t starts_every, ChainIsa isa) {
  if (isa == ChainIsa::none) return "the kernel set runs neither AVX-512 nor AVX2 code";
  int lanes = vector_lanes(isa);
  for (const ChainLoad& load : program.loads) {
    if (!stored_type(load.dtype)) return "it loads " + std::string(graph::dtype_name(load.dtype));
    if (loaded_by_counters(load, count) && !counted_broadcast(load.how, lanes))
      return "it broadcasts an operand other than element for element, one value for every "
             "element, or a row or a row's value of a multiple of " +
             std::to_string(lanes) + " elements";
  }
  std::vector<graph::FlatBroadcast> broadcasts = counted_broadcasts(program, count);
  if (counter_registers(broadcasts) > static_cast<int>(kCounterRegisters.size()))
    return "it follows " + std::to_string(broadcasts.size()) + " broadcasts, more than " +
           std::to_string(kCounterRegisters.size()) + " registers count";
  if (!broadcasts.empty() && starts_every % lanes != 0)
    return "it broadcasts rows, and its runs start every " + std::to_string(starts_every) +
           " elements, not at multiples of " + std::to_string(lanes);
  for (const ChainStore& store : program.stores) {
    if (!stored_type(store.dtype))
      return "it stores " + std::string(graph::dtype_name(store.dtype));
  }
  RegisterLayout layout = register_layout(program, isa);
  if (!layout.fits())
    return "it holds " + std::to_string(layout.needed) + " values at once" +
           (layout.reads_memory ? " beside those it reads from memory" : "") + ", more than " +
           std::to_string(layout.available) + " vector registers";
  if (!program.sums.empty() && count % kSumLanes != 0)
    return "it sums " + std::to_string(count) + " elements, not a multiple of " +
           std::to_string(kSumLanes);
  return {};
}

std::optional<CompiledChain> CompiledChain::compile(const ChainProgram& program, std::int64_t count,
                                                    std::int64_t starts_every, ChainIsa isa) {
  if (!why_not(program, count, starts_every, isa).empty()) return std::nullopt;
  try {
    return CompiledChain(std::make_shared<const Code>(program, count, isa));
  } catch (const Xbyak::Error& error) {
    // Memory this process may not make executable (a hardened kernel's policy): the interpreter
    // runs the chain. Any other error is the generator's.
    if (error == Xbyak::ERR_CANT_PROTECT || error == Xbyak::ERR_CANT_ALLOC) return std::nullopt;
    throw std::logic_error(std::string("csrun's chain code generator failed: ") + error.what());
  }
}

CompiledChain::CompiledChain(std::shared_ptr<const Code> code) : code_(std::move(code)) {}

// AVX-512's code masks the last elements short of a vector; AVX2's leaves them to the caller.
std::int64_t CompiledChain::whole_vectors_end(std::int64_t first, std::int64_t last) const {
  int lanes = vector_lanes(code_->isa);
  if (first % lanes != 0 && code_->counts)
    throw std::invalid_argument("a compiled chain that broadcasts rows runs from a multiple of " +
                                std::to_string(lanes) + " elements, not from element " +
                                std::to_string(first));
  if (code_->isa == ChainIsa::avx512 || last <= first) return last;
  return first + (last - first) / lanes * lanes;
}

std::int64_t CompiledChain::run(std::int64_t first, std::int64_t last, double* chunk_sums) const {
  std::int64_t end = whole_vectors_end(first, last);
  if (code_->sums == 0) {
    if (end > first) code_->function(first, end, nullptr, nullptr);
    return end;
  }
  // The sums' chunks are whole: a chain sums only a multiple of kSumLanes elements, and its runs
  // start at chunks.
  if (end != last)
    throw std::invalid_argument("a compiled chain with sums runs whole vectors, not elements " +
                                std::to_string(first) + " to " + std::to_string(last));
  std::array<double, kMaxProgramSums * kSumLanes> lanes{};
  for (std::int64_t chunk = first; chunk < last; chunk += kSumChunk) {
    code_->function(chunk, std::min(last, chunk + kSumChunk), lanes.data(), nullptr);
    for (std::size_t s = 0; s < code_->sums; ++s)
      *chunk_sums++ =
          lanes_total(std::span<const double, kSumLanes>(&lanes[s * kSumLanes], kSumLanes));
  }
  return last;
}

namespace {

// Whether this process may make memory it wrote executable, as the code generator does.
bool may_execute_written_code() {
  try {
    Xbyak::CodeGenerator probe(kPageBytes, Xbyak::DontSetProtectRWE);
    probe.ret();
    return probe.setProtectModeRE(false);
  } catch (const Xbyak::Error&) {
    return false;
  }
}

std::string why_interpreted() {
  const char* interpret = std::getenv("CSRUN_INTERPRET_CHAINS");
  if (interpret != nullptr && !std::string_view(interpret).empty() &&
      std::string_view(interpret) != "0")
    return "CSRUN_INTERPRET_CHAINS";
  if (!may_execute_written_code())
    return "this system does not let a process execute memory it wrote, as SELinux's "
           "deny_execmem does";
  return {};
}

}  // namespace

const std::string& why_chains_interpreted_here() {
  static const std::string why = why_interpreted();
  return why;
}

std::int64_t CompiledChain::run_on_row(std::int64_t first, std::int64_t last, float* row) const {
  std::int64_t end = whole_vectors_end(first, last);
  if (end > first) code_->function(first, end, nullptr, row);
  return end;
}

bool chains_compiled_here() {
  return why_chains_interpreted_here().empty();
}

}  // namespace csrun::runtime

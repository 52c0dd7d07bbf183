#include "compiled_chain.hpp"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "full_sum.hpp"
#include "graph/types.hpp"
#include "half_precision.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;
using Xbyak::Zmm;

// Elements [first, last); with sums, each sum's eight lanes (kSumLanes doubles a sum) at `lanes`;
// with a row register or row result, the caller's row buffer of those elements at `row`.
using ChainFunction = void (*)(std::int64_t first, std::int64_t last, double* lanes, float* row);

constexpr int kVectorLanes = 16;
constexpr int kVectorRegisters = 32;
// zmm27-zmm31: the temporaries of conversions and of instructions that take two steps.
constexpr int kScratchRegisters = 5;
constexpr std::size_t kPageBytes = 4096;

int home_registers(const ChainProgram& program) {
  return kVectorRegisters - kScratchRegisters - static_cast<int>(program.sums.size());
}

bool element_for_element(const graph::FlatBroadcast& how, std::int64_t count) {
  return how.repeat == 1 && how.outer_period == 1 && how.period == count;
}

// A broadcast the loop follows with counters: a row of `period` elements repeated (repeat 1), or
// one value a row, `repeat` elements long, of `period` rows (a row's statistic). Each vector then
// reads within one row: a whole number of vectors a row, and vectors start at a multiple of 16.
bool counted_broadcast(const graph::FlatBroadcast& how) {
  if (how.outer_period != 1 || how.period < 1 || how.repeat < 1) return false;
  if (how.repeat == 1) return how.period % kVectorLanes == 0;
  return how.repeat % kVectorLanes == 0;
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

// The program as one loop of 16 elements a vector. Program register r lives in zmm r, a sum's
// eight lanes in the zmm after the program's registers; k1 masks the elements left in the last
// vector, k2 and k3 are temporaries. rax is the element, rsi the last, r9 the row buffer's base,
// r10 the sums' lanes, r8 and r11 temporaries; the counters take callee-saved registers.
class ChainEmitter : public Xbyak::CodeGenerator {
  // A counted broadcast's place at the loop's element: the element in its row, and for a row's
  // statistic the row.
  struct Counter {
    graph::FlatBroadcast how;
    Xbyak::Reg64 in_row;
    Xbyak::Reg64 row;
  };

 public:
  ChainEmitter(const ChainProgram& program, std::int64_t count, std::size_t bytes)
      : CodeGenerator(bytes, Xbyak::DontSetProtectRWE), program_(program), count_(count) {
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
  Zmm home(std::int32_t reg) const { return Zmm(reg); }
  Zmm sum_lanes(std::size_t s) const {
    return Zmm(kVectorRegisters - kScratchRegisters - static_cast<int>(program_.sums.size()) +
               static_cast<int>(s));
  }
  static Zmm scratch(int index) { return Zmm(kVectorRegisters - kScratchRegisters + index); }

  // A 32-bit constant broadcast to every lane, as a memory operand.
  Xbyak::Address every_lane(std::uint32_t value) { return ptr_b[rip + constants_[value]]; }
  Xbyak::Address one_lane(std::uint32_t value) { return dword[rip + constants_[value]]; }

  // Loads a 64-bit address into r11 and returns the element at the loop's index.
  Xbyak::RegExp element(const void* base, int element_bytes) {
    mov(r11, reinterpret_cast<std::uint64_t>(base));
    return r11 + rax * element_bytes;
  }

  // The loop takes whole vectors without masks (masked stores and narrowing stores are slow on
  // some CPUs), then the last few elements, if any, under k1.
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
      if (load.single()) emit_single(load);
    }
    for (std::size_t s = 0; s < program_.sums.size(); ++s)
      vxorpd(sum_lanes(s), sum_lanes(s), sum_lanes(s));
    mov(rax, rdi);
    L(loop);
    mov(r8, rsi);
    sub(r8, rax);
    cmp(r8, kVectorLanes);
    jl(tail, T_NEAR);
    emit_vector(false);
    add(rax, kVectorLanes);
    for (const Counter& counter : counters_)
      advance_counter(counter);
    jmp(loop, T_NEAR);
    L(tail);
    test(r8, r8);
    jle(done, T_NEAR);
    mov(r11d, 0xFFFFFFFF);
    bzhi(r11d, r11d, r8d);
    kmovw(k1, r11d);
    emit_vector(true);
    L(done);
    for (std::size_t s = 0; s < program_.sums.size(); ++s)
      vmovupd(ptr[r10 + static_cast<int>(s * kSumLanes * sizeof(double))], sum_lanes(s));
    for (auto counter = counters_.rbegin(); counter != counters_.rend(); ++counter) {
      if (counter->how.repeat > 1) pop(counter->row);
      pop(counter->in_row);
    }
    vzeroupper();
    ret();
    emit_constants();
  }

  // One vector's loads, instructions, stores and sums; `masked`: only the lanes k1 holds.
  void emit_vector(bool masked) {
    masked_ = masked;
    for (const ChainLoad& load : program_.loads) {
      if (!load.single()) emit_load(load);
    }
    for (std::size_t reg = 0; reg < program_.direct.size(); ++reg) {
      if (program_.direct[reg] != nullptr)
        emit_load_f32(home(static_cast<std::int32_t>(reg)), program_.direct[reg]);
    }
    if (program_.row_register >= 0) vmovups(loaded(home(program_.row_register)), ptr[r9 + rax * 4]);
    for (const ChainInstruction& instruction : program_.instructions)
      emit_instruction(instruction);
    for (const ChainStore& store : program_.stores)
      emit_store(store);
    if (program_.row_result >= 0) {
      Xbyak::Address row = ptr[r9 + rax * 4];
      vmovups(masked_ ? row | k1 : row, home(program_.row_result));
    }
    for (std::size_t s = 0; s < program_.sums.size(); ++s)
      emit_sum(s);
  }

  Zmm loaded(const Zmm& out) const { return masked_ ? out | k1 | T_z : out; }

  void emit_load_f32(const Zmm& out, const void* base) {
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
    add(counter.in_row, kVectorLanes);
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

  // A counted broadcast's vector: 16 elements of its row, or its row's one value in every lane.
  void emit_counted_load(const ChainLoad& load) {
    const Counter& counter = counter_of(load.how);
    Zmm out = home(load.reg);
    int bytes = load.dtype == DType::f32 ? 4 : graph::is_half(load.dtype) ? 2 : 1;
    mov(r11, reinterpret_cast<std::uint64_t>(load.data));
    if (load.how.repeat == 1) {
      Xbyak::Address at = ptr[r11 + counter.in_row * bytes];  // 16 elements of the row
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
  void broadcast_element(DType dtype, const Zmm& out, const Xbyak::RegExp& at) {
    if (dtype == DType::f32) return vbroadcastss(out, dword[at]);
    if (graph::is_half(dtype)) {
      movzx(r8d, word[at]);
      vpbroadcastd(out, r8d);
      return widen(dtype, out, out);
    }
    movzx(r8d, byte[at]);
    vpbroadcastd(out, r8d);
    truth_of_nonzero_bits(out);
  }

  void emit_single(const ChainLoad& load) {
    mov(r11, reinterpret_cast<std::uint64_t>(load.data));
    broadcast_element(load.dtype, home(load.reg), r11);
  }

  void emit_load(const ChainLoad& load) {
    if (loaded_by_counters(load, count_)) return emit_counted_load(load);
    Zmm out = home(load.reg);
    if (load.dtype == DType::f32) return emit_load_f32(out, load.data);
    if (graph::is_half(load.dtype)) {
      vpmovzxwd(loaded(out), ptr[element(load.data, 2)]);
      return widen(load.dtype, out, out);
    }
    vpmovzxbd(loaded(out), ptr[element(load.data, 1)]);
    truth_of_nonzero_bits(out);
  }

  // 1.0f in the lanes whose bits are not all zero (a boolean's byte), 0.0f in the others.
  void truth_of_nonzero_bits(const Zmm& value) {
    vptestmd(k2, value, value);
    vbroadcastss(value | k2 | T_z, one_lane(kOne));
  }

  void truth_of(const Zmm& out, const Zmm& a, const Xbyak::Operand& b, std::uint8_t predicate) {
    vcmpps(k2, a, b, predicate);
    vbroadcastss(out | k2 | T_z, one_lane(kOne));
  }

  void emit_instruction(const ChainInstruction& instruction) {
    Zmm out = home(instruction.out);
    Zmm a = home(instruction.a);
    Zmm b = home(instruction.b);
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
        vpandd(scratch(4), a, every_lane(0x7FFFFFFFu));
        vpcmpud(k2, scratch(4), every_lane(0x7F800000u), kUnsignedLess);
        return vbroadcastss(out | k2 | T_z, one_lane(kOne));
      case ChainCode::logical_not:
        return truth_of(out, a, every_lane(0), kEqual);
      case ChainCode::neg:
        return vpxord(out, a, every_lane(0x80000000u));
      case ChainCode::abs:
        return vpandd(out, a, every_lane(0x7FFFFFFFu));
      case ChainCode::relu:
        // x <= 0 ? 0 : x, so NaN stays and -0 becomes +0.
        vcmpps(k2, a, every_lane(0), kLessEqual);
        knotw(k2, k2);
        return vmovaps(out | k2 | T_z, a);
      case ChainCode::sqrt:
        return vsqrtps(out, a);
      case ChainCode::rsqrt:
        vsqrtps(scratch(4), a);
        vbroadcastss(out, one_lane(kOne));
        return vdivps(out, out, scratch(4));
      case ChainCode::where:
        vcmpps(k2, a, every_lane(0), kNotEqual);
        return vblendmps(out | k2, home(instruction.c), b);
      case ChainCode::narrow:
        narrow(instruction.format, out, a);
        return widen(instruction.format, out, out);
      case ChainCode::copy:
        return vmovaps(out, a);
    }
  }

  void nan_sum(const Zmm& out, const Zmm& a, const Zmm& b) {
    vcmpps(k2, a, b, kUnordered);
    vaddps(out | k2, a, b);
  }

  void emit_store(const ChainStore& store) {
    Zmm value = home(store.reg);
    if (store.dtype == DType::f32) {
      if (masked_) return vmovups(ptr[element(store.data, 4)] | k1, value);
      return vmovups(ptr[element(store.data, 4)], value);
    }
    Zmm narrowed = scratch(4);
    if (graph::is_half(store.dtype)) {
      narrow(store.dtype, narrowed, value);
      if (masked_) return vpmovdw(ptr[element(store.data, 2)] | k1, narrowed);
      vpmovdw(Xbyak::Ymm(narrowed.getIdx()), narrowed);
      return vmovdqu32(ptr[element(store.data, 2)], Xbyak::Ymm(narrowed.getIdx()));
    }
    vcmpps(k2, value, every_lane(0), kNotEqual);
    vpbroadcastd(narrowed | k2 | T_z, one_lane(1));
    if (masked_) return vpmovdb(ptr[element(store.data, 1)] | k1, narrowed);
    vpmovdb(Xbyak::Xmm(narrowed.getIdx()), narrowed);
    vmovdqu32(ptr[element(store.data, 1)], Xbyak::Xmm(narrowed.getIdx()));
  }

  // Lane j of a sum's accumulator adds elements 8i + j in order, as ChunkSum does: the vector's
  // first eight elements, then its last eight, each only where the element is below `last`.
  void emit_sum(std::size_t s) {
    Zmm value = home(program_.sums[s]);
    Zmm lanes = sum_lanes(s);
    vcvtps2pd(scratch(0), Xbyak::Ymm(value.getIdx()));
    vaddpd(masked_ ? lanes | k1 : lanes, lanes, scratch(0));
    if (masked_) kshiftrw(k3, k1, 8);
    vextractf64x4(Xbyak::Ymm(scratch(1).getIdx()), value, 1);
    vcvtps2pd(scratch(0), Xbyak::Ymm(scratch(1).getIdx()));
    vaddpd(masked_ ? lanes | k3 : lanes, lanes, scratch(0));
  }

  // half_format::narrow: the 16-bit encodings of `in`'s lanes in `out`'s (zero-extended); `out`
  // may be scratch(4), not `in`.
  void narrow(DType dtype, const Zmm& out, const Zmm& in) {
    HalfConstants f = half_constants(dtype);
    Zmm magnitude = scratch(0);
    Zmm sign = scratch(1);
    Zmm encoded = scratch(2);
    vpandd(magnitude, in, every_lane(0x7FFFFFFFu));
    vpsrld(sign, in, 16);
    vpandd(sign, sign, every_lane(0x8000u));
    std::uint32_t rebias = static_cast<std::uint32_t>(127 - f.bias) << 23;
    vpsrld(encoded, magnitude, static_cast<std::uint8_t>(f.shift()));
    vpandd(encoded, encoded, every_lane(1));
    vpaddd(encoded, encoded, magnitude);
    vpaddd(encoded, encoded, every_lane((1u << (f.shift() - 1)) - 1u - rebias));
    vpsrld(encoded, encoded, static_cast<std::uint8_t>(f.shift()));
    vpminud(encoded, encoded, every_lane(f.exponent_mask));
    if (f.bias != 127) {
      Zmm subnormal = scratch(3);
      vaddps(subnormal, magnitude, every_lane(f.subnormal_magic()));
      vpsubd(subnormal, subnormal, every_lane(f.subnormal_magic()));
      vpcmpud(k2, magnitude, every_lane(static_cast<std::uint32_t>(128 - f.bias) << 23),
              kUnsignedLess);
      vmovdqa32(encoded | k2, subnormal);
    }
    vpord(out, encoded, sign);
    vpcmpud(k2, magnitude, every_lane(0x7F800000u), kUnsignedGreater);
    if (f.signed_nan) {
      vpord(scratch(3), sign, every_lane(f.quiet_nan));
      vmovdqa32(out | k2, scratch(3));
    } else {
      vpbroadcastd(out | k2, one_lane(f.quiet_nan));
    }
  }

  // half_format::widen of the 16-bit encodings in `in`'s lanes; `in` may be `out`.
  void widen(DType dtype, const Zmm& out, const Zmm& in) {
    HalfConstants f = half_constants(dtype);
    if (f.bias == 127) return vpslld(out, in, static_cast<std::uint8_t>(f.shift()));
    Zmm magnitude = scratch(0);
    Zmm sign = scratch(1);
    Zmm special = scratch(2);
    Zmm subnormal = scratch(3);
    vpandd(sign, in, every_lane(0x8000u));
    vpslld(sign, sign, 16);
    vpandd(magnitude, in, every_lane(0x7FFFu));
    vpslld(special, magnitude, static_cast<std::uint8_t>(f.shift()));
    vpaddd(out, special, every_lane(static_cast<std::uint32_t>(127 - f.bias) << 23));
    vpord(special, special, every_lane(0x7F800000u));
    vpaddd(subnormal, magnitude, every_lane(f.subnormal_magic()));
    vsubps(subnormal, subnormal, every_lane(f.subnormal_magic()));
    vpcmpud(k2, magnitude, every_lane(1u << f.mantissa_bits), kUnsignedLess);
    vmovdqa32(out | k2, subnormal);
    vpcmpud(k2, magnitude, every_lane(f.exponent_mask), kUnsignedNotLess);
    vmovdqa32(out | k2, special);
    vpord(out, out, sign);
  }

  void emit_constants() {
    align(4);
    for (auto& [value, label] : constants_) {
      L(label);
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

struct CompiledChain::Code {
  Code(const ChainProgram& chain, std::int64_t count)
      : program(chain),
        emitter(program, count, code_bytes(program)),
        function(emitter.getCode<ChainFunction>()),
        sums(program.sums.size()),
        counts(!counted_broadcasts(program, count).empty()) {}

  ChainProgram program;
  ChainEmitter emitter;
  ChainFunction function;
  std::size_t sums;
  bool counts;  // whether it follows broadcasts with counters, which start at whole vectors
};

std::string CompiledChain::why_not(const ChainProgram& program, std::int64_t count,
                                   std::int64_t starts_every) {
  for (const ChainLoad& load : program.loads) {
    if (!stored_type(load.dtype)) return "it loads " + std::string(graph::dtype_name(load.dtype));
    if (loaded_by_counters(load, count) && !counted_broadcast(load.how))
      return "it broadcasts an operand other than element for element, one value for every "
             "element, or a row or a row's value of a multiple of 16 elements";
  }
  std::vector<graph::FlatBroadcast> broadcasts = counted_broadcasts(program, count);
  if (counter_registers(broadcasts) > static_cast<int>(kCounterRegisters.size()))
    return "it follows " + std::to_string(broadcasts.size()) + " broadcasts, more than " +
           std::to_string(kCounterRegisters.size()) + " registers count";
  if (!broadcasts.empty() && starts_every % kVectorLanes != 0)
    return "it broadcasts rows, and its runs start every " + std::to_string(starts_every) +
           " elements, not at multiples of " + std::to_string(kVectorLanes);
  for (const ChainStore& store : program.stores) {
    if (!stored_type(store.dtype))
      return "it stores " + std::string(graph::dtype_name(store.dtype));
  }
  if (program.registers > home_registers(program))
    return "it holds " + std::to_string(program.registers) + " values at once, more than " +
           std::to_string(home_registers(program)) + " vector registers";
  if (!program.sums.empty() && count % kSumLanes != 0)
    return "it sums " + std::to_string(count) + " elements, not a multiple of " +
           std::to_string(kSumLanes);
  return {};
}

std::optional<CompiledChain> CompiledChain::compile(const ChainProgram& program, std::int64_t count,
                                                    std::int64_t starts_every) {
  if (!why_not(program, count, starts_every).empty()) return std::nullopt;
  try {
    return CompiledChain(std::make_shared<const Code>(program, count));
  } catch (const Xbyak::Error& error) {
    // Memory this process may not make executable (a hardened kernel's policy): the interpreter
    // runs the chain. Any other error is the generator's.
    if (error == Xbyak::ERR_CANT_PROTECT || error == Xbyak::ERR_CANT_ALLOC) return std::nullopt;
    throw std::logic_error(std::string("csrun's chain code generator failed: ") + error.what());
  }
}

CompiledChain::CompiledChain(std::shared_ptr<const Code> code) : code_(std::move(code)) {}

void CompiledChain::check_start(std::int64_t first) const {
  if (code_->counts && first % kVectorLanes != 0)
    throw std::invalid_argument("a compiled chain that broadcasts rows runs from a multiple of " +
                                std::to_string(kVectorLanes) + " elements, not from element " +
                                std::to_string(first));
}

void CompiledChain::run(std::int64_t first, std::int64_t last, double* chunk_sums) const {
  check_start(first);
  if (code_->sums == 0) return code_->function(first, last, nullptr, nullptr);
  std::array<double, kMaxProgramSums * kSumLanes> lanes{};
  for (std::int64_t chunk = first; chunk < last; chunk += kSumChunk) {
    code_->function(chunk, std::min(last, chunk + kSumChunk), lanes.data(), nullptr);
    for (std::size_t s = 0; s < code_->sums; ++s)
      *chunk_sums++ =
          lanes_total(std::span<const double, kSumLanes>(&lanes[s * kSumLanes], kSumLanes));
  }
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

void CompiledChain::run_on_row(std::int64_t first, std::int64_t last, float* row) const {
  check_start(first);
  code_->function(first, last, nullptr, row);
}

bool chains_compiled_here() {
  return why_chains_interpreted_here().empty();
}

}  // namespace csrun::runtime

#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/op.hpp"

namespace csrun::compiler {

// A set of element types.
class DTypes {
 public:
  constexpr DTypes() = default;
  constexpr DTypes(std::initializer_list<graph::DType> types) {
    for (graph::DType type : types)
      bits_ |= bit(type);
  }
  constexpr bool contains(graph::DType type) const { return (bits_ & bit(type)) != 0; }
  constexpr DTypes operator|(DTypes other) const { return from_bits(bits_ | other.bits_); }
  std::string to_string() const;  // "f32, bf16"

 private:
  static constexpr std::uint8_t bit(graph::DType type) {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(type));
  }
  static constexpr DTypes from_bits(std::uint8_t bits) {
    DTypes types;
    types.bits_ = bits;
    return types;
  }
  std::uint8_t bits_ = 0;
};

// How the wafer model prices a kernel on a region of processing elements (lib/wafer).
enum class CostModel : std::uint8_t {
  fmac,       // multiply-accumulate at the PEs' SIMD rate, operands broadcast along the fabric
  streaming,  // one pass over the data at the PEs' SRAM bandwidth
  reduction,  // a streaming pass plus a reduction tree across the region
  movement,   // data moved across the fabric to other PEs
  view,       // no work: shares its operand's buffer
};
const char* cost_model_name(CostModel model);

// One op a kernel runs: on which operand and result types, whether only along the last axis, up
// to which rank (0: the kernel's max_rank), and whether its result may be written over its first
// operand where that has the result's type: the kernel reads each row of the operand before it
// writes that row of the result (the memory plan then gives both one buffer when nothing reads
// the operand later).
struct OpRule {
  graph::OpKind op;
  DTypes operands;
  DTypes results;
  bool last_axis_only = false;
  int max_rank = 0;
  bool over_operand = false;
};

// An entry of the kernel library: what it executes and what that costs.
struct KernelSpec {
  std::string_view name;
  std::string_view summary;
  std::string_view pattern;  // the fusion it executes ("matmul", "elementwise"), or "" for one op
  std::vector<OpRule> ops;
  // A fusion kernel also runs a lone node of this op (a matmul with nothing to fuse).
  std::optional<graph::OpKind> anchor;
  int max_rank = 6;
  CostModel cost = CostModel::streaming;
  // Cycles to start the kernel and synchronize its region, on top of its work.
  double fixed_cycles = 0.0;

  const OpRule* rule(graph::OpKind op) const;
  // Whether a node of `op` that is in no fusion may run as this kernel.
  bool runs_alone(graph::OpKind op) const { return pattern.empty() || anchor == op; }
};

// Every kernel, in the order matching tries them.
const std::vector<KernelSpec>& kernel_library();
const KernelSpec& kernel_spec(std::string_view name);  // throws std::out_of_range

}  // namespace csrun::compiler

#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "types.hpp"

namespace csrun::graph {

// The Attributes fields an op reads, as a set of bits (ops.def lists them per op).
using AttributeSet = std::uint32_t;
namespace attr {
inline constexpr AttributeSet none = 0;
inline constexpr AttributeSet values = 1u << 0;
inline constexpr AttributeSet axis = 1u << 1;
inline constexpr AttributeSet axes = 1u << 2;
inline constexpr AttributeSet keepdims = 1u << 3;
inline constexpr AttributeSet perm = 1u << 4;
inline constexpr AttributeSet begins = 1u << 5;
inline constexpr AttributeSet ends = 1u << 6;
inline constexpr AttributeSet eps = 1u << 7;
inline constexpr AttributeSet approximate = 1u << 8;
inline constexpr AttributeSet depth = 1u << 9;
inline constexpr AttributeSet rate = 1u << 10;
inline constexpr AttributeSet seed = 1u << 11;
inline constexpr AttributeSet salt = 1u << 12;
inline constexpr AttributeSet shape = 1u << 13;
inline constexpr AttributeSet dtype = 1u << 14;
}  // namespace attr

// Every operation of the IR, in the order of ops.def, which declares each one.
enum class OpKind : std::uint8_t {
#define OP(name, class_, arity, reads) name,
#include "ops.def"
};

inline constexpr unsigned kOpCount = 0
#define OP(name, class_, arity, reads) +1
#include "ops.def"
    ;

enum class OpClass : std::uint8_t { leaf, elementwise, reduction, layout, compute };

const char* op_name(OpKind op);
OpClass op_class(OpKind op);
// How many operands the op takes; -1 for one or more.
int op_arity(OpKind op);
AttributeSet attributes_read(OpKind op);

// A digest of ops.def (each op's name, class, arity and attributes, in order). A saved plan
// records it, so a plan written with another op table is compiled again rather than read with
// shifted op numbers.
std::uint64_t op_table_digest();

bool is_binary_elementwise(OpKind op);
bool is_unary_elementwise(OpKind op);
bool is_comparison(OpKind op);  // produces booleans

// The parameters of a node; which fields an op reads is listed in ops.def.
struct Attributes {
  Shape shape;
  std::vector<std::int64_t> axes;
  std::vector<std::int64_t> perm;
  std::vector<std::int64_t> begins;
  std::vector<std::int64_t> ends;
  std::vector<double> values;
  std::int64_t axis = 0;
  std::int64_t depth = 0;
  bool keepdims = false;
  bool approximate = false;
  double eps = 0.0;
  double rate = 0.0;
  std::uint64_t seed = 0;
  std::uint64_t salt = 0;
  DType dtype = DType::f32;

  friend bool operator==(const Attributes&, const Attributes&) = default;
};

// A transpose permutation that swaps the last two axes and keeps the others: a matrix transpose
// of each batch element, which a GEMM can read in place.
bool swaps_last_two_axes(std::span<const std::int64_t> perm);

}  // namespace csrun::graph

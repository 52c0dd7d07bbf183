#include "op.hpp"

#include <array>

namespace csrun::graph {

namespace {

struct OpInfo {
  const char* name;
  OpClass op_class;
  int arity;
  AttributeSet reads;
};

constexpr std::array<OpInfo, kOpCount> kOps{{
#define OP(name, class_, arity, reads) {#name, OpClass::class_, arity, reads},
#include "ops.def"
}};

constexpr std::uint64_t digest_of_table() {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  auto add = [&hash](std::uint64_t value) {
    hash ^= value;
    hash *= 0x100000001B3ull;
  };
  for (const OpInfo& op : kOps) {
    for (const char* c = op.name; *c != '\0'; ++c)
      add(static_cast<unsigned char>(*c));
    add(static_cast<std::uint64_t>(op.op_class));
    add(static_cast<std::uint64_t>(op.arity + 1));
    add(op.reads);
  }
  return hash;
}

const OpInfo& info(OpKind op) {
  return kOps[static_cast<std::size_t>(op)];
}

}  // namespace

const char* op_name(OpKind op) {
  return info(op).name;
}

OpClass op_class(OpKind op) {
  return info(op).op_class;
}

int op_arity(OpKind op) {
  return info(op).arity;
}

AttributeSet attributes_read(OpKind op) {
  return info(op).reads;
}

std::uint64_t op_table_digest() {
  static constexpr std::uint64_t digest = digest_of_table();
  return digest;
}

bool is_binary_elementwise(OpKind op) {
  return op_class(op) == OpClass::elementwise && op_arity(op) == 2;
}

bool is_unary_elementwise(OpKind op) {
  return op_class(op) == OpClass::elementwise && op_arity(op) == 1;
}

bool is_comparison(OpKind op) {
  switch (op) {
#define COMPARISON_OP(name) case OpKind::name:
#include "ops.def"
    return true;
    default:
      return false;
  }
}

bool swaps_last_two_axes(std::span<const std::int64_t> perm) {
  std::size_t rank = perm.size();
  if (rank < 2) return false;
  for (std::size_t axis = 0; axis + 2 < rank; ++axis) {
    if (perm[axis] != static_cast<std::int64_t>(axis)) return false;
  }
  return perm[rank - 2] == static_cast<std::int64_t>(rank - 1) &&
         perm[rank - 1] == static_cast<std::int64_t>(rank - 2);
}

}  // namespace csrun::graph

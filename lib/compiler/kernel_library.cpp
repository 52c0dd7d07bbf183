#include "kernel_library.hpp"

#include <stdexcept>

namespace csrun::compiler {

namespace {

using graph::DType;
using graph::OpKind;

constexpr DTypes kFloat{DType::f32, DType::f16, DType::bf16, DType::cb16};
constexpr DTypes kNumeric = kFloat | DTypes{DType::i32};
constexpr DTypes kBool{DType::boolean};
constexpr DTypes kAny = kNumeric | kBool;
constexpr DTypes kIndex{DType::i32};
// A 3-D convolution's windows: [N, C, K, D, H, W].
constexpr int kWindowsRank = 6;

std::vector<OpRule> rules(std::initializer_list<OpKind> ops, DTypes operands, DTypes results) {
  std::vector<OpRule> list;
  for (OpKind op : ops)
    list.push_back({op, operands, results, false});
  return list;
}

std::vector<OpRule> joined(std::initializer_list<std::vector<OpRule>> parts) {
  std::vector<OpRule> list;
  for (const std::vector<OpRule>& part : parts)
    list.insert(list.end(), part.begin(), part.end());
  return list;
}

// The dtypes an elementwise op of ops.def runs on. The PEs have no integer divider or integer
// transcendental unit: an op not listed here takes and gives floating-point values.
OpRule elementwise_rule(OpKind op) {
  switch (op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::maximum:
    case OpKind::minimum:
    case OpKind::neg:
    case OpKind::abs:
      return {op, kNumeric, kNumeric};
    case OpKind::logical_and:
    case OpKind::logical_or:
    case OpKind::logical_not:
      return {op, kBool, kBool};
    case OpKind::is_finite:
      return {op, kFloat, kBool};
    case OpKind::where:
      return {op, kAny, kNumeric};
    case OpKind::cast:
      return {op, kAny, kAny};
    default:
      return {op, graph::is_comparison(op) ? kNumeric : kFloat,
              graph::is_comparison(op) ? kBool : kFloat};
  }
}

// Every elementwise op of ops.def, and dropout, which reads the step counter (i32) to draw its
// mask.
std::vector<OpRule> elementwise_rules() {
  std::vector<OpRule> list;
  for (unsigned index = 0; index < graph::kOpCount; ++index) {
    auto op = static_cast<OpKind>(index);
    if (graph::op_class(op) == graph::OpClass::elementwise) list.push_back(elementwise_rule(op));
  }
  list.push_back({OpKind::dropout, kFloat | kIndex, kFloat});
  return list;
}

std::vector<KernelSpec> make_library() {
  return {
      {.name = "matmul",
       .summary = "matrix product on a 2-D block of PEs, with operand transposes and conversions "
                  "applied as it loads, a convolution's windows formed as it loads them, "
                  "its product summed onto a convolution's input as it stores, "
                  "and a bias, reshape, cast and activation as it stores",
       .pattern = "matmul",
       .ops = joined({{{OpKind::matmul, kFloat, kFloat, false},
                       {OpKind::windows, kFloat, kFloat, false, kWindowsRank},
                       {OpKind::windows_sum, kFloat, kFloat, false, kWindowsRank},
                       {OpKind::reshape, kFloat, kFloat, false, kWindowsRank}},
                      rules({OpKind::transpose, OpKind::cast, OpKind::add, OpKind::relu,
                             OpKind::gelu, OpKind::tanh, OpKind::sigmoid},
                            kFloat, kFloat)}),
       .anchor = OpKind::matmul,
       .max_rank = 4,
       .cost = CostModel::fmac,
       .fixed_cycles = 200.0},
      {.name = "fused_elementwise",
       .summary = "a chain of elementwise ops over one shape in a single pass, the intermediate "
                  "values kept in registers, and sums of its f32 values over every axis taken "
                  "as it goes",
       .pattern = "elementwise",
       .ops = joined({elementwise_rules(),
                      rules({OpKind::reduce_sum}, DTypes{DType::f32}, DTypes{DType::f32})}),
       .anchor = std::nullopt,
       .max_rank = 6,
       .cost = CostModel::streaming,
       .fixed_cycles = 50.0},
      {.name = "elementwise",
       .summary = "one elementwise op in a single pass",
       .pattern = "",
       .ops = elementwise_rules(),
       .anchor = std::nullopt,
       .max_rank = 6,
       .cost = CostModel::streaming,
       .fixed_cycles = 50.0},
      {.name = "reduce",
       .summary = "sum, mean or max over axes, or the position of the maximum",
       .pattern = "",
       .ops = rules({OpKind::reduce_sum, OpKind::reduce_mean, OpKind::reduce_max, OpKind::argmax},
                    kFloat, kFloat | kIndex),
       .anchor = std::nullopt,
       .max_rank = 6,
       .cost = CostModel::reduction,
       .fixed_cycles = 100.0},
      {.name = "softmax",
       .summary = "softmax or log-softmax along the last axis and softmax's gradient (f32); the "
                  "cross-entropy of its rows against integer labels and that loss's gradient, "
                  "each in one pass",
       .pattern = "",
       .ops = joined({{{OpKind::softmax, kFloat, kFloat, true},
                       {OpKind::log_softmax, kFloat, kFloat, true},
                       {OpKind::softmax_grad, DTypes{DType::f32}, DTypes{DType::f32}, true}},
                      rules({OpKind::softmax_cross_entropy}, kFloat | kIndex, kFloat),
                      {{.op = OpKind::softmax_cross_entropy_grad,
                        .operands = kFloat | kIndex,
                        .results = kFloat,
                        .over_operand = true}}}),
       .anchor = std::nullopt,
       .max_rank = 4,
       .cost = CostModel::reduction,
       .fixed_cycles = 100.0},
      {.name = "fused_softmax",
       .summary = "softmax along the last axis in f32 with the elementwise ops around it, row by "
                  "row: those computing its input (attention's scale and mask) and a 16-bit copy "
                  "of its rows as it writes them; or softmax's gradient with the elementwise ops "
                  "reading it (the mask, scale and 16-bit cast); or both, where only the gradient "
                  "and the 16-bit copy read the softmax",
       .pattern = "softmax",
       .ops = joined({{{OpKind::softmax, DTypes{DType::f32}, DTypes{DType::f32}, true},
                       {OpKind::softmax_grad, DTypes{DType::f32}, DTypes{DType::f32}, true}},
                      elementwise_rules()}),
       .anchor = std::nullopt,
       .max_rank = 4,
       .cost = CostModel::reduction,
       .fixed_cycles = 100.0},
      {.name = "layer_norm",
       .summary = "normalization over the last axis",
       .pattern = "",
       .ops = rules({OpKind::layer_norm}, kFloat, kFloat),
       .anchor = std::nullopt,
       .max_rank = 4,
       .cost = CostModel::reduction,
       .fixed_cycles = 100.0},
      {.name = "embedding",
       .summary = "rows of a table gathered by integer indices, one-hot vectors, and the "
                  "gradient's scatter-add (accumulated in f32)",
       .pattern = "",
       .ops =
           joined({rules({OpKind::gather}, kFloat | kIndex, kFloat),
                   rules({OpKind::one_hot}, kIndex, kFloat),
                   rules({OpKind::scatter_add}, DTypes{DType::f32} | kIndex, DTypes{DType::f32})}),
       .anchor = std::nullopt,
       .max_rank = 4,
       .cost = CostModel::movement,
       .fixed_cycles = 200.0},
      {.name = "transpose",
       .summary = "an axis permutation",
       .pattern = "",
       .ops = rules({OpKind::transpose}, kAny, kAny),
       .anchor = std::nullopt,
       .max_rank = 6,
       .cost = CostModel::movement,
       .fixed_cycles = 100.0},
      {.name = "copy",
       .summary = "slicing, padding, concatenation, broadcasting, a convolution's windows and "
                  "their gradient's sums",
       .pattern = "",
       .ops = joined({rules({OpKind::slice, OpKind::pad, OpKind::concat, OpKind::broadcast_to,
                             OpKind::windows},
                            kAny, kAny),
                      rules({OpKind::windows_sum}, kFloat, kFloat)}),
       .anchor = std::nullopt,
       .max_rank = 6,
       .cost = CostModel::movement,
       .fixed_cycles = 100.0},
      {.name = "view",
       .summary = "a reshape: the same elements in the same buffer",
       .pattern = "",
       .ops = rules({OpKind::reshape}, kAny, kAny),
       .anchor = std::nullopt,
       .max_rank = 8,
       .cost = CostModel::view,
       .fixed_cycles = 0.0},
  };
}

}  // namespace

std::string DTypes::to_string() const {
  std::string text;
  for (DType type :
       {DType::f32, DType::f16, DType::bf16, DType::cb16, DType::i32, DType::boolean}) {
    if (!contains(type)) continue;
    if (!text.empty()) text += ", ";
    text += graph::dtype_name(type);
  }
  return text;
}

const char* cost_model_name(CostModel model) {
  switch (model) {
    case CostModel::fmac:
      return "fmac";
    case CostModel::streaming:
      return "streaming";
    case CostModel::reduction:
      return "reduction";
    case CostModel::movement:
      return "movement";
    case CostModel::view:
      return "view";
  }
  return "?";
}

const OpRule* KernelSpec::rule(graph::OpKind op) const {
  for (const OpRule& candidate : ops) {
    if (candidate.op == op) return &candidate;
  }
  return nullptr;
}

const std::vector<KernelSpec>& kernel_library() {
  static const std::vector<KernelSpec> library = make_library();
  return library;
}

const KernelSpec& kernel_spec(std::string_view name) {
  for (const KernelSpec& spec : kernel_library()) {
    if (spec.name == name) return spec;
  }
  throw std::out_of_range("no kernel named " + std::string(name));
}

}  // namespace csrun::compiler

// Every elementwise op of ops.def, run by the runtime (the selected kernel set, through its
// compiled plan) and by the reference evaluator on special values: NaN, infinities, signed zeros,
// subnormals, the largest finite values, in every dtype the op takes. The two must agree on each
// element: NaN for NaN, the sign of a zero, an infinity, a subnormal not flushed to zero.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "compiler/kernel_library.hpp"
#include "graph/reference_evaluator.hpp"
#include "graph/shape_inference.hpp"
#include "graph/tensor.hpp"
#include "runtime_fixture.hpp"

using namespace csrun;
using graph::DType;
using graph::OpKind;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> special_values(DType dtype) {
  if (dtype == DType::boolean) return {0.0, 1.0};
  if (dtype == DType::i32) return {0.0, 1.0, -1.0, 7.0, -7.0, 2147483647.0, -2147483648.0};
  double largest = dtype == DType::f32 ? std::numeric_limits<float>::max() : 60000.0;
  double smallest = dtype == DType::f32 ? 1e-40 : 1e-7;  // subnormal in f32, small in 16 bits
  // +-100: exp overflows and underflows to a subnormal in f32.
  return {kNaN, kInf, -kInf, 0.0,     -0.0,     smallest, -smallest, 1.0,   -1.0,
          0.5,  -2.5, 3.0,   largest, -largest, 1e-3,     100.0,     -100.0};
}

// The operand dtypes an op takes: those its type rule accepts and the elementwise kernel runs
// with the result the rule gives.
std::vector<DType> operand_dtypes(OpKind op, const graph::Attributes& attrs) {
  const compiler::OpRule* rule = compiler::kernel_spec("elementwise").rule(op);
  REQUIRE(rule != nullptr);
  std::vector<DType> taken;
  for (DType dtype :
       {DType::f32, DType::bf16, DType::f16, DType::cb16, DType::i32, DType::boolean}) {
    if (!rule->operands.contains(dtype)) continue;
    std::vector<graph::TensorType> types(static_cast<std::size_t>(graph::op_arity(op)),
                                         graph::TensorType{{1}, dtype});
    if (op == OpKind::where) types[0].dtype = DType::boolean;
    try {
      if (rule->results.contains(graph::infer_type(op, types, attrs).dtype)) taken.push_back(dtype);
    } catch (const std::invalid_argument&) {
    }
  }
  return taken;
}

struct Case {
  std::vector<graph::TensorType> types;
  std::vector<std::vector<double>> operands;
  graph::Attributes attrs;
};

// Every combination of special values: x for a unary op, (a, b) for a binary one, and for where
// (condition, a, b) with the condition alternating.
Case make_case(OpKind op, DType dtype, const graph::Attributes& attrs) {
  std::vector<double> values = special_values(dtype);
  std::size_t n = values.size();
  Case made;
  made.attrs = attrs;
  if (graph::is_unary_elementwise(op)) {
    made.operands = {values};
  } else {
    std::vector<double> a;
    std::vector<double> b;
    for (std::size_t i = 0; i < n * n; ++i) {
      a.push_back(values[i / n]);
      b.push_back(values[i % n]);
    }
    made.operands = {a, b};
  }
  for (std::size_t i = 0; i < made.operands.size(); ++i)
    made.types.push_back({{static_cast<std::int64_t>(made.operands[i].size())}, dtype});
  if (op == OpKind::where) {
    std::vector<double> condition;
    for (std::size_t i = 0; i < n * n; ++i)
      condition.push_back(static_cast<double>(i % 3 == 0));
    made.operands.insert(made.operands.begin(), condition);
    made.types.insert(made.types.begin(), {{static_cast<std::int64_t>(n * n)}, DType::boolean});
  }
  return made;
}

// Whether the runtime's `actual` is the reference's `expected` in `dtype`: exact for integers,
// booleans, NaN, infinities and zeros (with their sign); otherwise within the kernels' rounding
// (a few units in the last place of the dtype), measured at least against the smallest normal
// number, so that a subnormal flushed to zero is a difference.
bool agrees(double actual, double expected, DType dtype) {
  if (dtype == DType::f32) expected = static_cast<float>(expected);
  if (dtype == DType::i32 || dtype == DType::boolean) return actual == expected;
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected) || expected == 0.0)
    return actual == expected && std::signbit(actual) == std::signbit(expected);
  double tolerance = dtype == DType::f32 ? 1e-5 : 2e-2;
  double scale =
      std::max(std::fabs(expected), static_cast<double>(std::numeric_limits<float>::min()));
  return std::fabs(actual - expected) <= tolerance * scale;
}

std::string value_text(double value) {
  std::ostringstream text;
  text << std::setprecision(9) << value;
  return text.str();
}

// The op's result, then a node that keeps every bit of it (times one, or a boolean chosen as one
// or zero), so that the two form a chain: in registers where the plan runs it there. A result of
// another dtype stays alone.
graph::NodeId kept_in_chain(graph::Graph& graph, graph::Feeds& feeds, graph::NodeId result) {
  graph::Tensor value(graph, result);
  graph::Tensor one(graph, graph.add_input("one", {{}, DType::f32}));
  graph::Tensor zero(graph, graph.add_input("zero", {{}, DType::f32}));
  feeds["one"] = {{}, DType::f32, {1.0}};
  feeds["zero"] = {{}, DType::f32, {0.0}};
  switch (value.dtype()) {
    case DType::boolean:
      return where(value, one, zero).id();
    case DType::bf16:
    case DType::f16:
    case DType::cb16:
      return (cast(value, DType::f32) * one).id();
    case DType::f32:
      return (value * one).id();
    default:
      return result;  // no chain in registers reads it
  }
}

// Runs the op once on the runtime and on the reference; returns a line per element that differs.
// `in_chain`: followed by kept_in_chain; counts the plans that ran in registers.
std::vector<std::string> differences(OpKind op, DType dtype, const graph::Attributes& attrs,
                                     bool in_chain = false, int* in_registers = nullptr) {
  Case made = make_case(op, dtype, attrs);
  graph::Graph graph;
  graph::Feeds feeds;
  std::vector<graph::NodeId> operands;
  for (std::size_t i = 0; i < made.types.size(); ++i) {
    std::string name = "operand" + std::to_string(i);
    operands.push_back(graph.add_input(name, made.types[i]));
    feeds[name] = {made.types[i].shape, made.types[i].dtype, made.operands[i]};
  }
  graph::NodeId value = graph.add(op, operands, made.attrs);
  graph.add_output("result", in_chain ? kept_in_chain(graph, feeds, value) : value);
  compiler::Plan plan = test::compiled_plan(graph, 1);
  if (in_registers != nullptr) {
    *in_registers += std::any_of(plan.host_steps.begin(), plan.host_steps.end(),
                                 [](const compiler::HostStep& step) { return step.in_registers; });
  }
  runtime::Executable executable(plan);
  test::feed(executable, feeds);
  executable.run();
  std::vector<double> actual = executable.read(executable.slot("result"));
  graph::NodeId result = plan.graph.outputs().front().node;
  graph::HostTensor expected = graph::evaluate_reference(plan.graph, feeds, {&result, 1}).front();
  std::vector<std::string> lines;
  for (std::size_t e = 0; e < actual.size(); ++e) {
    if (agrees(actual[e], expected.values[e], expected.dtype)) continue;
    std::string line = std::string(graph::op_name(op)) + "(";
    for (std::size_t i = 0; i < made.operands.size(); ++i)
      line += (i > 0 ? ", " : "") + value_text(made.operands[i][e]);
    lines.push_back(line + ") in " + graph::dtype_name(dtype) + " to " +
                    graph::dtype_name(expected.dtype) + ": runtime " + value_text(actual[e]) +
                    ", reference " + value_text(expected.values[e]));
  }
  return lines;
}

// The attributes the op reads, in each of their meaningful settings.
std::vector<graph::Attributes> attribute_settings(OpKind op) {
  std::vector<graph::Attributes> settings(1);
  if (op == OpKind::gelu) settings.emplace_back().approximate = true;
  if (op != OpKind::cast) return settings;
  settings.clear();
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::cb16, DType::i32})
    settings.emplace_back().dtype = dtype;
  return settings;
}

}  // namespace

namespace {

// Every elementwise op, in each of its attribute settings and operand dtypes.
struct Sweep {
  int ops = 0;
  int in_registers = 0;     // plans that ran a chain in registers
  std::string differences;  // a line per element where the runtime and the reference disagree
};

Sweep sweep_ops(bool in_chain) {
  Sweep sweep;
  for (unsigned index = 0; index < graph::kOpCount; ++index) {
    auto op = static_cast<OpKind>(index);
    if (graph::op_class(op) != graph::OpClass::elementwise) continue;
    ++sweep.ops;
    for (const graph::Attributes& attrs : attribute_settings(op)) {
      for (DType dtype : operand_dtypes(op, attrs)) {
        for (const std::string& line : differences(op, dtype, attrs, in_chain, &sweep.in_registers))
          sweep.differences += line + "\n";
      }
    }
  }
  return sweep;
}

}  // namespace

TEST_CASE("every elementwise op agrees with the reference on NaN, infinities, zeros, subnormals") {
  Sweep sweep = sweep_ops(false);
  INFO(sweep.differences);
  CHECK(sweep.differences.empty());
  CHECK(sweep.ops >= 32);
}

TEST_CASE("chains in registers agree with the reference on NaN, infinities, zeros, subnormals") {
  Sweep sweep = sweep_ops(true);
  INFO(sweep.differences);
  CHECK(sweep.differences.empty());
  // f32 arithmetic (11 ops, exp, erf, exact gelu and sigmoid), comparisons (6), where, and the
  // casts from f32 to f32 and to each 16-bit format and back (31 plans in all).
  CHECK(sweep.in_registers >= 31);
}

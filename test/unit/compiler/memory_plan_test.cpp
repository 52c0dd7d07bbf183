#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.hpp"
#include "compiler/memory_plan.hpp"
#include "graph/tensor.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;
using namespace csrun::graph;

namespace {

compiler::Plan plan_for(Graph graph) {
  return compiler::build_plan(compiler::compile_step(std::move(graph), {}), {}, {});
}

bool overlap_in_space(const compiler::Buffer& a, const compiler::Buffer& b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

bool overlap_in_time(const compiler::Buffer& a, const compiler::Buffer& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

// A small GPT-2's training step in bfloat16: every kind of buffer, 16-bit copies among them.
compiler::Plan small_gpt2_plan() {
  models::TracedStep step = test::traced_step(
      "{name: gpt2, vocab_size: 1100, hidden_size: 16, num_heads: 2, num_hidden_layers: 2, "
      "filter_size: 32, max_position_embeddings: 8}",
      2);
  return compiler::build_plan(
      compiler::compile_step(std::move(step.graph), {{true, DType::bf16, 1}, {}}), {}, {});
}

}  // namespace

TEST_CASE("temporaries that are never live together share space") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{256}, DType::f32}));
  Tensor y = x;
  // Each softmax (its own kernel) makes a 1 KiB result only the next one reads.
  for (int i = 0; i < 8; ++i)
    y = softmax(y);
  graph.add_output("y", y.id());
  compiler::Plan plan = plan_for(graph);
  const compiler::MemoryPlan& memory = plan.memory;
  CHECK(memory.persistent_bytes == 1024);
  // Without reuse: the input and eight results; with it, two results at a time.
  CHECK(memory.unshared_bytes == 9 * 1024);
  CHECK(memory.peak_bytes == 3 * 1024);
}

TEST_CASE("temporaries are placed largest first where that leaves fewer gaps") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{256}, DType::f32}));
  Tensor wide(graph, graph.add_input("wide", {{512}, DType::f32}));
  // One kernel each, in this order: a (1 KiB, read by e), b and e (1 KiB, results), c (2 KiB).
  Tensor a = softmax(x);
  Tensor b = log_softmax(x);
  Tensor e = layer_norm(a, 1e-5);
  Tensor c = softmax(wide);
  graph.add_output("b", b.id());
  graph.add_output("e", e.id());
  graph.add_output("c", c.id());
  compiler::Plan plan = plan_for(graph);
  const compiler::MemoryPlan& memory = plan.memory;
  CHECK(memory.persistent_bytes == 3 * 1024);
  // Kernel by kernel, c would find only a's 1 KiB free and go above b and e (5 KiB of
  // temporaries); placed first, it takes a's place, which a leaves before c is born.
  CHECK(memory.peak_bytes == memory.persistent_bytes + 4 * 1024);
  for (const compiler::Buffer& one : memory.buffers) {
    for (const compiler::Buffer& other : memory.buffers) {
      if (&one == &other || one.bytes == 0 || other.bytes == 0) continue;
      CHECK_FALSE((overlap_in_time(one, other) && overlap_in_space(one, other)));
    }
  }
}

TEST_CASE("the live peak names the kernel where the most temporaries live, largest first") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{256}, DType::f32}));
  // One kernel each: y (1 KiB), its copy to four rows (4 KiB), their softmax (4 KiB, read by the
  // sum alone) and the sum.
  Tensor y = softmax(x);
  Tensor rows = broadcast_to(y, {4, 256});
  Tensor normalized = softmax(rows);
  graph.add_output("total", sum(normalized).id());
  compiler::Plan plan = plan_for(graph);
  compiler::LivePeak peak = compiler::live_peak(plan.memory, plan.kernels.size());
  REQUIRE(peak.kernel >= 0);
  // While the second softmax runs, the four rows and their softmax are live, y no longer is.
  const compiler::Kernel& kernel = plan.kernels[static_cast<std::size_t>(peak.kernel)];
  CHECK(plan.graph.node(kernel.nodes.back()).op == OpKind::softmax);
  CHECK(peak.bytes == 8 * 1024);
  REQUIRE(peak.buffers.size() == 2);
  for (std::int32_t index : peak.buffers)
    CHECK(plan.memory.buffers[static_cast<std::size_t>(index)].bytes == 4 * 1024);

  Graph constant_only;
  Tensor input(constant_only, constant_only.add_input("input", {{4}, DType::f32}));
  constant_only.add_output("input", input.id());
  compiler::Plan empty = plan_for(constant_only);
  CHECK(compiler::live_peak(empty.memory, empty.kernels.size()).kernel == -1);
}

TEST_CASE("the memory plan of a real step: aligned, and no two live buffers overlap") {
  compiler::Plan plan = small_gpt2_plan();
  const compiler::MemoryPlan& memory = plan.memory;
  REQUIRE(memory.buffer_of.size() == plan.graph.size());
  CHECK(memory.peak_bytes < memory.unshared_bytes);
  int page_aligned = 0;
  for (const compiler::Buffer& buffer : memory.buffers) {
    CHECK(buffer.offset % compiler::kBufferAlignment == 0);
    // The embedding table's (1100 x 16 f32): checkpoints read and write it by direct I/O.
    if (buffer.kind == compiler::BufferKind::variable &&
        buffer.bytes >= compiler::kPageAlignedVariableBytes) {
      CHECK(buffer.offset % compiler::kPageBytes == 0);
      ++page_aligned;
    }
    CHECK(buffer.offset + buffer.bytes <= memory.peak_bytes);
    bool persistent = buffer.kind != compiler::BufferKind::temporary;
    CHECK(persistent == (buffer.offset < memory.persistent_bytes));
  }
  CHECK(page_aligned >= 1);
  for (std::size_t i = 0; i < memory.buffers.size(); ++i) {
    for (std::size_t j = i + 1; j < memory.buffers.size(); ++j) {
      const compiler::Buffer& a = memory.buffers[i];
      const compiler::Buffer& b = memory.buffers[j];
      if (a.bytes == 0 || b.bytes == 0) continue;
      INFO("buffers " << i << " and " << j);
      CHECK_FALSE((overlap_in_time(a, b) && overlap_in_space(a, b)));
    }
  }
  // Every kernel result has a buffer; the values inside a fusion have none, but for one its
  // result reshapes.
  for (const compiler::Kernel& kernel : plan.kernels) {
    for (NodeId result : kernel.results)
      CHECK(memory.buffer_of[static_cast<std::size_t>(result)] >= 0);
  }
}

TEST_CASE("the variables lie side by side, then their 16-bit copies, then the other leaves") {
  // A step that reads its weights where another keeps them never touches their buffers: none of
  // its own values may share a huge page with them but at the ends of that run.
  compiler::Plan plan = small_gpt2_plan();
  auto offset_of = [&](NodeId id) {
    std::int32_t buffer = plan.memory.buffer_of[static_cast<std::size_t>(id)];
    return plan.memory.buffers[static_cast<std::size_t>(buffer)].offset;
  };
  std::int64_t variables_end = 0;
  std::int64_t copies_start = plan.memory.persistent_bytes;
  std::int64_t copies_end = 0;
  int copies = 0;
  for (const graph::Variable& variable : plan.graph.variables()) {
    std::int64_t end = offset_of(variable.node) + plan.graph.node(variable.node).type.byte_size();
    if (variable.role == VariableRole::half_copy) {
      copies_start = std::min(copies_start, offset_of(variable.node));
      copies_end = std::max(copies_end, end);
      ++copies;
    } else {
      variables_end = std::max(variables_end, end);
    }
  }
  REQUIRE(copies > 0);
  CHECK(variables_end <= copies_start);
  for (std::size_t i = 0; i < plan.graph.size(); ++i) {
    const graph::Node& node = plan.graph.nodes()[i];
    if (op_class(node.op) != OpClass::leaf || node.op == OpKind::variable ||
        plan.memory.buffer_of[i] < 0)
      continue;
    INFO("leaf %" << i);
    CHECK(offset_of(static_cast<NodeId>(i)) >= copies_end);
  }
}

TEST_CASE("a reshape shares its operand's buffer, which lives as long as the reshape's readers") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor flat = reshape(softmax(x), {32});
  Tensor later = reshape(softmax(softmax(x) * 2.0), {32});
  graph.add_output("z", (flat + later).id());
  compiler::Plan plan = plan_for(graph);
  const Graph& g = plan.graph;
  const Node& sum = g.node(*g.find_output("z"));
  NodeId reshape_id = sum.inputs[0];
  REQUIRE(g.node(reshape_id).op == OpKind::reshape);
  NodeId source = g.node(reshape_id).inputs[0];
  REQUIRE(g.node(source).op == OpKind::softmax);
  const compiler::MemoryPlan& memory = plan.memory;
  std::int32_t shared = memory.buffer_of[static_cast<std::size_t>(reshape_id)];
  CHECK(shared == memory.buffer_of[static_cast<std::size_t>(source)]);
  // The last kernel (the add) reads it through the reshape (and may write its sum over it).
  CHECK(memory.buffers[static_cast<std::size_t>(shared)].last_use >=
        static_cast<std::int32_t>(plan.kernels.size() - 1));
}

TEST_CASE("a fusion whose result reshapes a value of its own computes that value in place") {
  // A linear layer's epilogue: the bias added to the product, viewed as [batch, sequence, width].
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{2, 3, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{16, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor b(graph, graph.add_variable("b", {{16}, DType::f32}, VariableRole::parameter, {}));
  Tensor biased = matmul(reshape(x, {6, 8}), swap_last_axes(w)) + b;
  graph.add_output("y", reshape(biased, {2, 3, 16}).id());
  compiler::Plan plan = plan_for(graph);
  const Graph& g = plan.graph;
  NodeId result = *g.find_output("y");
  REQUIRE(g.node(result).op == OpKind::reshape);
  NodeId source = g.node(result).inputs[0];
  REQUIRE(g.node(source).op == OpKind::add);
  const compiler::MemoryPlan& memory = plan.memory;
  bool fused = std::any_of(plan.kernels.begin(), plan.kernels.end(), [&](const auto& kernel) {
    return std::count(kernel.nodes.begin(), kernel.nodes.end(), source) == 1 &&
           std::count(kernel.results.begin(), kernel.results.end(), result) == 1;
  });
  REQUIRE(fused);
  CHECK(memory.buffer_of[static_cast<std::size_t>(result)] >= 0);
  CHECK(memory.buffer_of[static_cast<std::size_t>(source)] ==
        memory.buffer_of[static_cast<std::size_t>(result)]);
}

TEST_CASE(
    "a variable's new value is computed in its own buffer when nothing reads the old one later") {
  Graph graph;
  Tensor g(graph, graph.add_input("g", {{64}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{64}, DType::f32}, VariableRole::parameter, {}));
  Tensor m(graph, graph.add_variable("m", {{64}, DType::f32}, VariableRole::optimizer_state, {}));
  Tensor momentum = m * 0.9 + g;
  graph.set_update("m", momentum.id());
  graph.set_update("w", (w - momentum * 0.1).id());
  graph.add_output("m_before", m.id());  // the step returns the old m: its update needs a copy
  compiler::Plan plan = plan_for(graph);
  const compiler::MemoryPlan& memory = plan.memory;
  auto buffer = [&](NodeId id) { return memory.buffer_of[static_cast<std::size_t>(id)]; };
  auto update_of = [&](const std::string& name) {
    for (const NamedNode& update : plan.graph.updates()) {
      if (update.name == name) return update.node;
    }
    FAIL("no update of " << name);
    return NodeId{-1};
  };
  CHECK(buffer(update_of("w")) == buffer(plan.graph.find_variable("w")->node));
  CHECK(buffer(update_of("m")) != buffer(plan.graph.find_variable("m")->node));
}

TEST_CASE("the cross-entropy's gradient is written over the logits when nothing reads them later") {
  enum class Logits { loss_only, returned, read_later };
  auto shares = [](Logits logits_use) {
    Graph graph;
    Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
    Tensor labels(graph, graph.add_input("labels", {{4}, DType::i32}));
    Tensor g(graph, graph.add_input("g", {{4}, DType::f32}));
    Tensor w(graph, graph.add_variable("w", {{16, 8}, DType::f32}, VariableRole::parameter, {}));
    Tensor logits = matmul(x, swap_last_axes(w));
    graph.add_output("loss", softmax_cross_entropy(logits, labels).id());
    Tensor gradient = softmax_cross_entropy_grad(logits, labels, g);
    graph.add_output("dx", matmul(gradient, w).id());
    if (logits_use == Logits::returned) graph.add_output("logits", logits.id());
    if (logits_use == Logits::read_later) graph.add_output("top", argmax(logits).id());
    compiler::Plan plan = plan_for(graph);
    const compiler::MemoryPlan& memory = plan.memory;
    for (std::size_t i = 0; i < plan.graph.size(); ++i) {
      const Node& node = plan.graph.nodes()[i];
      if (node.op != OpKind::softmax_cross_entropy_grad) continue;
      return memory.buffer_of[i] == memory.buffer_of[static_cast<std::size_t>(node.inputs[0])];
    }
    FAIL("no cross-entropy gradient");
    return false;
  };
  CHECK(shares(Logits::loss_only));
  CHECK_FALSE(shares(Logits::returned));
  CHECK_FALSE(shares(Logits::read_later));
}

TEST_CASE(
    "an elementwise kernel writes its result over an operand it reads only on the way there") {
  enum class Operand { read_once, returned, read_later, read_beside };
  auto shares = [](Operand use) {
    Graph graph;
    Tensor x(graph, graph.add_input("x", {{4, 16}, DType::f32}));
    Tensor s = softmax(x);
    graph.add_output("y", (s * 3.0 + 1.0).id());
    if (use == Operand::returned) graph.add_output("s", s.id());
    if (use == Operand::read_later) graph.add_output("later", softmax(s).id());
    if (use == Operand::read_beside) graph.add_output("beside", (s - 1.0).id());
    compiler::Plan plan = plan_for(graph);
    const Graph& g = plan.graph;
    std::size_t softmax_id = 0;
    while (softmax_id < g.size() && g.nodes()[softmax_id].op != OpKind::softmax)
      ++softmax_id;
    REQUIRE(softmax_id < g.size());
    auto y = static_cast<std::size_t>(*g.find_output("y"));
    return plan.memory.buffer_of[y] == plan.memory.buffer_of[softmax_id];
  };
  CHECK(shares(Operand::read_once));
  CHECK_FALSE(shares(Operand::returned));
  CHECK_FALSE(shares(Operand::read_later));
  CHECK_FALSE(shares(Operand::read_beside));
}

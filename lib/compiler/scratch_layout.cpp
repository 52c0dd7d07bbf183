#include "scratch_layout.hpp"

#include <algorithm>
#include <optional>

#include "plan.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;

std::int64_t aligned(std::int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

std::int32_t buffer_of(const Plan& plan, NodeId id) {
  return plan.memory.buffer_of.at(static_cast<std::size_t>(id));
}

bool persistent(const Plan& plan, NodeId id) {
  std::int32_t buffer = buffer_of(plan, id);
  return buffer >= 0 &&
         plan.memory.buffers.at(static_cast<std::size_t>(buffer)).kind != BufferKind::temporary;
}

void lay_out_kernel_values(const Plan& plan, ScratchLayout& layout) {
  std::vector<bool> without_place = values_without_place(plan);
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    std::int64_t offset = 0;
    for (NodeId id : plan.kernels[k].nodes) {
      if (buffer_of(plan, id) >= 0 || without_place.at(static_cast<std::size_t>(id))) continue;
      layout.kernel_values.push_back({id, offset, static_cast<std::int32_t>(k)});
      offset += aligned(plan.graph.node(id).type.byte_size());
    }
    layout.kernel_value_bytes = std::max(layout.kernel_value_bytes, offset);
  }
}

void lay_out_snapshots(const Plan& plan, ScratchLayout& layout) {
  auto take = [&](NodeId id) {
    layout.snapshots.push_back({id, layout.kernel_value_bytes + layout.snapshot_bytes});
    layout.snapshot_bytes += aligned(plan.graph.node(id).type.byte_size());
  };
  for (const graph::NamedNode& update : plan.graph.updates()) {
    const graph::Variable* variable = plan.graph.find_variable(update.name);
    bool in_place = variable && buffer_of(plan, update.node) == buffer_of(plan, variable->node);
    if (persistent(plan, update.node) && !in_place) take(update.node);
  }
  for (const graph::NamedNode& output : plan.graph.outputs()) {
    if (persistent(plan, output.node)) take(output.node);
  }
}

std::int64_t widened_bytes(const Plan& plan, std::initializer_list<NodeId> values) {
  std::int64_t floats = 0;
  for (NodeId id : values) {
    const graph::TensorType& type = plan.graph.node(id).type;
    if (type.dtype != graph::DType::f32) floats += graph::element_count(type.shape);
  }
  return floats * static_cast<std::int64_t>(sizeof(float));
}

// A product's operands and result as its host step reads and writes them, and its matmul node.
struct ProductValues {
  NodeId a = -1;
  NodeId b = -1;
  NodeId result = -1;
  NodeId matmul = -1;
};

std::optional<ProductValues> product_values(const Plan& plan, const HostStep& host) {
  if (host.kind == HostStepKind::gemm)
    return ProductValues{host.operand_a, host.operand_b, host.result, host.nodes.front()};
  if (host.kind != HostStepKind::node) return std::nullopt;
  NodeId id = host.nodes.front();
  const graph::Node& node = plan.graph.node(id);
  if (node.op != graph::OpKind::matmul) return std::nullopt;
  return ProductValues{node.inputs.at(0), node.inputs.at(1), id, id};
}

// The f32 work space of a set that widens every 16-bit operand and result.
std::int64_t product_widening(const Plan& plan, const ProductValues& product) {
  return widened_bytes(plan, {product.a, product.b, product.result});
}

// The f32 work space a core takes for one of many products whose 16-bit left operand is widened
// a block of rows at a time (widened_product_rows): the block and the other operands and result
// widened; nullopt for other products.
std::optional<std::int64_t> rows_widening_a_core(const Plan& plan, const ProductValues& product) {
  const graph::Node& matmul = plan.graph.node(product.matmul);
  const graph::TensorType& a = plan.graph.node(matmul.inputs.at(0)).type;
  const graph::Shape& out = matmul.type.shape;
  if (!graph::is_half(a.dtype) || out.size() < 3 || a.shape.empty()) return std::nullopt;
  std::int64_t m = out.at(out.size() - 2);
  std::int64_t k = a.shape.back();
  std::int64_t rows = widened_product_rows(m, k);
  if (rows == m || graph::element_count(out) <= m * out.back()) return std::nullopt;
  return rows * k * static_cast<std::int64_t>(sizeof(float)) +
         widened_bytes(plan, {product.b, product.result});
}

// A kernel set that multiplies bfloat16 in hardware takes two bfloat16 operands as they are and
// writes their f32 or bfloat16 result itself, but for a bfloat16 result of no inner dimension,
// computed in f32 work space first. Other operands it widens like any set.
std::int64_t hardware_bf16_widening(const Plan& plan, const ProductValues& product) {
  auto dtype = [&](NodeId id) { return plan.graph.node(id).type.dtype; };
  if (dtype(product.a) != graph::DType::bf16 || dtype(product.b) != graph::DType::bf16)
    return product_widening(plan, product);
  const graph::Node& matmul = plan.graph.node(product.matmul);
  bool inner = plan.graph.node(matmul.inputs.at(0)).type.shape.back() > 0;
  if (dtype(product.result) == graph::DType::bf16 && inner) return 0;
  return widened_bytes(plan, {product.result});
}

// The floats of a core's work space for a product summed onto windows: the f32 block of the
// tile's columns for all the product's rows; with 16-bit operands, op(b)'s columns and op(a)
// widened.
std::int64_t windows_sum_work_floats(const Plan& plan, const graph::Node& product,
                                     std::int64_t tile) {
  const graph::TensorType& a = plan.graph.node(product.inputs.at(0)).type;
  const graph::TensorType& b = plan.graph.node(product.inputs.at(1)).type;
  const graph::Shape& out = product.type.shape;
  std::int64_t m = out.at(out.size() - 2);
  std::int64_t k = a.shape.back();
  std::int64_t floats = m * tile;
  if (a.dtype != graph::DType::f32) floats += m * k;
  if (b.dtype != graph::DType::f32) floats += k * tile;
  return floats;
}

// The floats of a core's work space for a product that forms windows: a tile, the rows of the
// windows' matrices (as formed, before a transpose) by the columns a tile takes; with 16-bit
// operands, op(a)'s block widened (all of it, or the tile's columns of a sum); with a 16-bit
// result, its f32 block (the tile's columns, or all of a sum's).
std::int64_t windows_work_floats(const Plan& plan, const HostStep& host) {
  const graph::Node& product = plan.graph.node(host.nodes.front());
  if (host.windows_sum >= 0) return windows_sum_work_floats(plan, product, host.windows_tile);
  const graph::Shape& b = plan.graph.node(product.inputs.at(1)).type.shape;
  const graph::TensorType& a = plan.graph.node(product.inputs.at(0)).type;
  const graph::Shape& out = product.type.shape;
  std::int64_t m = out.at(out.size() - 2);
  std::int64_t tile = host.windows_tile;
  std::int64_t floats = (host.transposed_b ? b.back() : b.at(b.size() - 2)) * tile;
  if (a.dtype != graph::DType::f32) floats += m * (host.transposed_b ? tile : a.shape.back());
  if (product.type.dtype != graph::DType::f32)
    floats += m * (host.transposed_b ? out.back() : tile);
  return floats;
}

}  // namespace

std::vector<bool> values_without_place(const Plan& plan) {
  std::vector<bool> without(plan.graph.size(), false);
  auto mark = [&](NodeId id) { without.at(static_cast<std::size_t>(id)) = true; };
  for (const HostStep& host : plan.host_steps) {
    for (NodeId id : host.chunk_local)
      mark(id);
    if (host.kind != HostStepKind::gemm) continue;
    for (NodeId id : host.folded) {
      if (id != host.result) mark(id);
    }
    if (host.result != host.nodes.front()) mark(host.nodes.front());
  }
  return without;
}

ScratchLayout layout_scratch(const Plan& plan) {
  ScratchLayout layout;
  lay_out_kernel_values(plan, layout);
  lay_out_snapshots(plan, layout);
  for (const HostStep& host : plan.host_steps) {
    if (host.windows >= 0 || host.windows_sum >= 0) {
      layout.per_core_work_bytes =
          std::max(layout.per_core_work_bytes,
                   windows_work_floats(plan, host) * static_cast<std::int64_t>(sizeof(float)));
      continue;
    }
    std::optional<ProductValues> product = product_values(plan, host);
    if (!product) continue;
    if (std::optional<std::int64_t> a_core = rows_widening_a_core(plan, *product)) {
      layout.per_core_work_bytes = std::max(layout.per_core_work_bytes, *a_core);
      continue;
    }
    layout.widening_bytes = std::max(layout.widening_bytes, product_widening(plan, *product));
    layout.hardware_bf16_widening_bytes =
        std::max(layout.hardware_bf16_widening_bytes, hardware_bf16_widening(plan, *product));
  }
  return layout;
}

std::int64_t step_host_bytes(const Plan& plan, bool hardware_bf16, int cores) {
  return plan.memory.peak_bytes + plan.scratch.bytes(hardware_bf16, cores);
}

std::vector<std::int64_t> kernel_scratch_bytes(const Plan& plan) {
  std::vector<std::int64_t> bytes(plan.kernels.size(), 0);
  for (const ScratchLayout::Place& place : plan.scratch.kernel_values) {
    std::int64_t& kernel = bytes.at(static_cast<std::size_t>(place.kernel));
    kernel = std::max(kernel, place.offset + aligned(plan.graph.node(place.node).type.byte_size()));
  }
  return bytes;
}

std::string scratch_layout_text(const Plan& plan) {
  const ScratchLayout& scratch = plan.scratch;
  auto place_text = [&](const ScratchLayout::Place& place) {
    return "%" + std::to_string(place.node) + " at " + std::to_string(place.offset) + ", " +
           std::to_string(plan.graph.node(place.node).type.byte_size()) + " bytes\n";
  };
  std::string text = "region " + std::to_string(scratch.region_bytes()) +
                     " bytes (values inside kernels " + std::to_string(scratch.kernel_value_bytes) +
                     ", snapshots " + std::to_string(scratch.snapshot_bytes) +
                     "); f32 work space of 16-bit products " +
                     std::to_string(scratch.widening_bytes) + " bytes (" +
                     std::to_string(scratch.hardware_bf16_widening_bytes) +
                     " with bfloat16 multiplied in hardware); products worked a piece at a time " +
                     std::to_string(scratch.per_core_work_bytes) + " bytes a core\n";
  for (const ScratchLayout::Place& place : scratch.kernel_values) {
    text += "k" + std::to_string(place.kernel) + " " +
            plan.kernels.at(static_cast<std::size_t>(place.kernel)).name + ": " + place_text(place);
  }
  for (const ScratchLayout::Place& place : scratch.snapshots)
    text += "snapshot " + place_text(place);
  return text;
}

}  // namespace csrun::compiler

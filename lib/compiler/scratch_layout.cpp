#include "scratch_layout.hpp"

#include <algorithm>
#include <bit>
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

// The f32 work space of a product on a set that widens every 16-bit operand and result: its
// right-hand operand widened whole, which the team shares (and its left operand, where its tiles
// may be one row block), and per core of the team, the rows of op(a) a piece reads widened (a
// tile's rows of one product, or one of many products or a block of its rows:
// widened_product_rows) and a 16-bit result's f32 values it computes before rounding them (the
// largest tile, or one of many products).
using ProductWork = ScratchLayout::Work;

ProductWork product_work(const Plan& plan, const ProductValues& product) {
  const graph::Node& matmul = plan.graph.node(product.matmul);
  const graph::Shape& out = matmul.type.shape;
  std::int64_t m = out.at(out.size() - 2);
  std::int64_t n = out.back();
  std::int64_t k = plan.graph.node(matmul.inputs.at(0)).type.shape.back();
  bool many = graph::element_count(out) > m * n;
  auto is_half = [&](NodeId id) { return graph::is_half(plan.graph.node(id).type.dtype); };
  auto bytes = [](std::int64_t count) { return count * static_cast<std::int64_t>(sizeof(float)); };
  ProductWork work{widened_bytes(plan, {product.b}), 0};
  std::int64_t tile_rows = largest_tile_rows(m, n, k);
  if (is_half(product.a)) {
    if (many)
      work.per_core += bytes(widened_product_rows(m, k) * k);
    else if (tile_rows < m)
      work.per_core += bytes(tile_rows * k);
    else  // one row block, maybe in column halves: widened whole first
      work.shared += bytes(m * k);
  }
  if (is_half(product.result)) work.per_core += bytes(many ? m * n : largest_tile_values(m, n, k));
  return work;
}

// A kernel set that multiplies bfloat16 in hardware takes two bfloat16 operands as they are and
// writes their f32 or bfloat16 result itself, but for a bfloat16 result of no inner dimension,
// computed in f32 work space first. Other operands it widens like any set.
ProductWork hardware_bf16_work(const Plan& plan, const ProductValues& product) {
  auto dtype = [&](NodeId id) { return plan.graph.node(id).type.dtype; };
  if (dtype(product.a) != graph::DType::bf16 || dtype(product.b) != graph::DType::bf16)
    return product_work(plan, product);
  const graph::Node& matmul = plan.graph.node(product.matmul);
  bool inner = plan.graph.node(matmul.inputs.at(0)).type.shape.back() > 0;
  if (dtype(product.result) == graph::DType::bf16 && inner) return {};
  return {widened_bytes(plan, {product.result}), 0};
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

constexpr std::int64_t kMaxRowBlocks = 16;

// The rows of a row block, at least: both libraries pack the whole right-hand operand for every
// call, so the fewer the blocks, the less packing. On the AMX host (2026-11-28), blocks of 256
// rows or more rather than 128 (and rather than sgemm's blocks of 256 rows in two column halves)
// ran GPT-2 small's f32 products 5-10 % faster in-step, fc_mnist (batch 256, 32) 0-4 % and
// 6-13 %, and GPT-2 small's bfloat16 step 2-4 %; gpt2_tiny as fast.
constexpr std::int64_t kBlockRows = 256;
// A product too short for two such blocks but of 256 rows or more is two blocks of half its rows:
// two column halves ran fc_mnist's bfloat16 products (oneDNN, AMX) 7-13 % slower.
constexpr std::int64_t kMinBlockRows = 128;
// A product of fewer rows (fc_mnist's layers at batch 32) is cut in two column halves where that
// leaves at least this many columns each: each half packs half the right-hand operand.
constexpr std::int64_t kMinTileColumns = 256;

// A power of two of row blocks shares out evenly on 2, 4, 8 or 16 cores.
std::int64_t row_blocks(std::int64_t rows) {
  if (rows < 2 * kBlockRows) return std::clamp<std::int64_t>(rows / kMinBlockRows, 1, 2);
  auto blocks = static_cast<std::uint64_t>(std::min(rows / kBlockRows, kMaxRowBlocks));
  return static_cast<std::int64_t>(std::bit_floor(blocks));
}

// Adds `work` to `works` unless one of them takes as much or more of both parts, and drops those
// it takes as much or more of both parts than.
void add_work(std::vector<ScratchLayout::Work>& works, ScratchLayout::Work work) {
  auto covers = [](const ScratchLayout::Work& a, const ScratchLayout::Work& b) {
    return a.shared >= b.shared && a.per_core >= b.per_core;
  };
  if (work.shared == 0 && work.per_core == 0) return;
  for (const ScratchLayout::Work& kept : works) {
    if (covers(kept, work)) return;
  }
  std::erase_if(works, [&](const ScratchLayout::Work& kept) { return covers(work, kept); });
  works.push_back(work);
}

}  // namespace

ProductTiling product_tiling(std::int64_t m, std::int64_t n, std::int64_t k, bool columns_first) {
  if (m * n * k < kSplitProductMultiplyAdds) return {};
  std::int64_t blocks = row_blocks(m);
  bool halves = n >= 2 * kMinTileColumns;
  if (halves && (blocks == 1 || columns_first)) return {std::max<std::int64_t>(blocks / 2, 1), 2};
  return {blocks, 1};
}

std::int64_t largest_tile_rows(std::int64_t m, std::int64_t n, std::int64_t k) {
  return std::max(product_tiling(m, n, k, false).largest_rows(m),
                  product_tiling(m, n, k, true).largest_rows(m));
}

std::int64_t largest_tile_values(std::int64_t m, std::int64_t n, std::int64_t k) {
  std::int64_t values = 0;
  for (bool columns_first : {false, true}) {
    ProductTiling tiles = product_tiling(m, n, k, columns_first);
    values = std::max(values, tiles.largest_rows(m) * tiles.largest_columns(n));
  }
  return values;
}

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
      std::int64_t tile =
          windows_work_floats(plan, host) * static_cast<std::int64_t>(sizeof(float));
      add_work(layout.works, {0, tile});
      add_work(layout.hardware_bf16_works, {0, tile});
      continue;
    }
    std::optional<ProductValues> product = product_values(plan, host);
    if (!product) continue;
    add_work(layout.works, product_work(plan, *product));
    add_work(layout.hardware_bf16_works, hardware_bf16_work(plan, *product));
  }
  return layout;
}

std::int64_t step_host_bytes(const Plan& plan, bool hardware_bf16, int cores) {
  return plan.memory.peak_bytes + plan.scratch.bytes(hardware_bf16, cores);
}

std::int64_t temporary_host_bytes(const Plan& plan, bool hardware_bf16, int cores) {
  return plan.memory.peak_bytes - plan.memory.persistent_bytes +
         plan.scratch.work(hardware_bf16, cores);
}

std::vector<std::int64_t> kernel_scratch_bytes(const Plan& plan) {
  std::vector<std::int64_t> bytes(plan.kernels.size(), 0);
  for (const ScratchLayout::Place& place : plan.scratch.kernel_values) {
    std::int64_t& kernel = bytes.at(static_cast<std::size_t>(place.kernel));
    kernel = std::max(kernel, place.offset + aligned(plan.graph.node(place.node).type.byte_size()));
  }
  return bytes;
}

namespace {
// "S bytes + P bytes a core", one for each of `works`, or "0 bytes".
std::string works_text(const std::vector<ScratchLayout::Work>& works) {
  std::string text;
  for (const ScratchLayout::Work& work : works) {
    if (!text.empty()) text += " or ";
    text +=
        std::to_string(work.shared) + " bytes + " + std::to_string(work.per_core) + " bytes a core";
  }
  return text.empty() ? "0 bytes" : text;
}
}  // namespace

std::string scratch_layout_text(const Plan& plan) {
  const ScratchLayout& scratch = plan.scratch;
  auto place_text = [&](const ScratchLayout::Place& place) {
    return "%" + std::to_string(place.node) + " at " + std::to_string(place.offset) + ", " +
           std::to_string(plan.graph.node(place.node).type.byte_size()) + " bytes\n";
  };
  std::string text = "region " + std::to_string(scratch.region_bytes()) +
                     " bytes (values inside kernels " + std::to_string(scratch.kernel_value_bytes) +
                     ", snapshots " + std::to_string(scratch.snapshot_bytes) +
                     "); f32 work space of 16-bit products " + works_text(scratch.works) + " (" +
                     works_text(scratch.hardware_bf16_works) +
                     " with bfloat16 multiplied in hardware)\n";
  for (const ScratchLayout::Place& place : scratch.kernel_values) {
    text += "k" + std::to_string(place.kernel) + " " +
            plan.kernels.at(static_cast<std::size_t>(place.kernel)).name + ": " + place_text(place);
  }
  for (const ScratchLayout::Place& place : scratch.snapshots)
    text += "snapshot " + place_text(place);
  return text;
}

}  // namespace csrun::compiler

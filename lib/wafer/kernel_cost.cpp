#include "kernel_cost.hpp"

#include <algorithm>
#include <cmath>

#include "graph/flops.hpp"

namespace csrun::wafer {

namespace {

using graph::NodeId;

double value_bytes(const graph::Node& node) {
  return static_cast<double>(graph::element_count(node.type.shape)) *
         static_cast<double>(graph::dtype_size(node.type.dtype));
}

bool is_weight(const graph::Graph& graph, NodeId id) {
  const graph::Node& node = graph.node(id);
  return node.op == graph::OpKind::variable || node.op == graph::OpKind::constant;
}

// The value a kernel loads for a member's operand: through the kernel's own prologue (casts,
// transposes) back to what it reads from outside.
NodeId loaded_value(const graph::Graph& graph, const compiler::Kernel& kernel, NodeId operand) {
  while (std::binary_search(kernel.nodes.begin(), kernel.nodes.end(), operand) &&
         !graph.node(operand).inputs.empty()) {
    const graph::Node& node = graph.node(operand);
    if (node.op != graph::OpKind::cast && node.op != graph::OpKind::transpose) break;
    operand = node.inputs[0];
  }
  return operand;
}

// A transpose that keeps the last axis in place moves whole rows: with rows laid out on the PEs
// that use them it is a local copy, not a trip across the fabric. Slices, pads, concatenations
// and broadcasts copy locally too.
bool moves_locally(const graph::Graph& graph, const compiler::Kernel& kernel) {
  const graph::Node& root = graph.node(kernel.nodes.back());
  if (root.op == graph::OpKind::transpose) {
    const std::vector<std::int64_t>& perm = root.attrs.perm;
    return !perm.empty() && perm.back() == static_cast<std::int64_t>(perm.size()) - 1;
  }
  return kernel.name == "copy";
}

void add_matmul_operands(const graph::Graph& graph, const compiler::Kernel& kernel,
                         KernelWork& work) {
  for (NodeId id : kernel.nodes) {
    const graph::Node& node = graph.node(id);
    if (node.op != graph::OpKind::matmul) continue;
    work.half = graph::dtype_size(graph.node(node.inputs[0]).type.dtype) == 2;
    work.left_bytes += value_bytes(graph.node(node.inputs[0]));
    work.right_bytes += value_bytes(graph.node(node.inputs[1]));
    const graph::Shape& shape = node.type.shape;
    work.problems = static_cast<double>(graph::element_count(shape)) /
                    static_cast<double>(shape[shape.size() - 2] * shape.back());
    work.right_is_weight = is_weight(graph, loaded_value(graph, kernel, node.inputs[1]));
  }
}

}  // namespace

KernelWork KernelWork::scaled(double factor) const {
  KernelWork result = *this;
  result.flops *= factor;
  result.bytes_read *= factor;
  result.bytes_written *= factor;
  result.left_bytes *= factor;
  if (!right_is_weight) result.right_bytes *= factor;
  return result;
}

KernelWork kernel_work(const compiler::Plan& plan, const compiler::Kernel& kernel) {
  const graph::Graph& graph = plan.graph;
  const compiler::KernelSpec& spec = compiler::kernel_spec(kernel.name);
  KernelWork work;
  work.model = spec.cost;
  if (work.model == compiler::CostModel::movement && moves_locally(graph, kernel))
    work.model = compiler::CostModel::streaming;
  work.fixed_cycles = spec.fixed_cycles;
  for (NodeId id : kernel.nodes)
    work.flops += graph::node_flops(graph, graph.node(id));
  for (NodeId operand : kernel.operands) {
    double bytes = value_bytes(graph.node(operand));
    (is_weight(graph, operand) ? work.weight_bytes_read : work.bytes_read) += bytes;
  }
  for (NodeId result : kernel.results)
    work.bytes_written += value_bytes(graph.node(result));
  const graph::Node& root = graph.node(kernel.nodes.back());
  work.half = work.half || graph::dtype_size(root.type.dtype) == 2;
  if (work.model == compiler::CostModel::fmac) add_matmul_operands(graph, kernel, work);
  return work;
}

KernelTime kernel_time(const WaferProfile& profile, const KernelWork& work, std::int32_t width,
                       std::int32_t height) {
  if (work.model == compiler::CostModel::view) return {};
  double pes = static_cast<double>(width) * height;
  double lanes = work.half ? profile.half_lanes : profile.single_lanes;
  double read = work.bytes_read + work.weight_bytes_read;
  double memory = std::max(read / profile.sram_read_bytes_per_cycle,
                           work.bytes_written / profile.sram_write_bytes_per_cycle) /
                  pes;
  double compute = 0.0;
  double fabric = 0.0;
  // Kernels that exchange data across their region wait for it to cross (width + height hops);
  // a streaming kernel's data flows through the PEs it is already on.
  double crossing = static_cast<double>(width) + height;
  double latency =
      work.fixed_cycles + (work.model == compiler::CostModel::streaming ? 0.0 : crossing);
  switch (work.model) {
    case compiler::CostModel::fmac: {
      compute = work.flops / (pes * lanes * 2.0 * profile.fmac_efficiency);
      // Each independent problem gets a square share of the region; as in SUMMA, a PE receives
      // the operand rows and columns of its block along its row and column, over two links.
      // More problems than PEs: each PE loads whole problems of its own.
      double side = std::sqrt(std::max(pes / work.problems, 1.0));
      double per_pe = (work.left_bytes + work.right_bytes) / work.problems / side *
                      std::max(work.problems / pes, 1.0);
      fabric = per_pe / (2.0 * profile.link_bytes_per_cycle);
      break;
    }
    case compiler::CostModel::streaming:
      compute = work.flops / (pes * lanes);
      break;
    case compiler::CostModel::reduction:
      compute = work.flops / (pes * lanes);
      break;
    case compiler::CostModel::movement:
      // Data crosses the region: limited by its narrower side's links, both directions.
      fabric = (read + work.bytes_written) / 2.0 /
               (std::min(width, height) * 2.0 * profile.link_bytes_per_cycle);
      break;
    case compiler::CostModel::view:
      break;
  }
  double work_cycles = std::max({compute, memory, fabric});
  KernelTime time{work_cycles + latency, latency, "latency"};
  if (work_cycles >= latency) {
    time.bound = work_cycles == compute ? "compute" : work_cycles == memory ? "memory" : "fabric";
  }
  return time;
}

}  // namespace csrun::wafer

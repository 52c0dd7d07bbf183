#include "host_lowering.hpp"

#include <algorithm>
#include <span>

#include "node_users.hpp"

namespace csrun::compiler {

namespace {

using graph::DType;
using graph::NodeId;
using graph::OpKind;

class HostLowering {
 public:
  HostLowering(const graph::Graph& graph, const MemoryPlan& memory)
      : graph_(graph), memory_(memory), users_(graph) {}

  std::vector<HostStep> lower(const Kernel& kernel, std::int32_t index) const {
    std::vector<HostStep> steps;
    for (NodeId id : kernel.nodes)
      steps.push_back(single(id, index));
    fold_transposes(steps);
    fold_windows(steps);
    fold_windows_sums(steps);
    fold_bias_adds(steps);
    fold_rounded_copies(steps);
    fold_upstream_dropouts(steps);
    fold_row_chains(steps);
    fold_softmax_into_gradient(steps);
    keep_rounded_softmax_rows(steps);
    std::vector<NodeId> folded;
    for (const HostStep& step : steps) {
      folded.insert(folded.end(), step.folded.begin(), step.folded.end());
      folded.insert(folded.end(), step.row_chain.begin(), step.row_chain.end());
    }
    std::erase_if(steps, [&](const HostStep& step) {
      return std::find(folded.begin(), folded.end(), step.nodes.front()) != folded.end();
    });
    if (kernel.at_load) return steps;
    return chain_elementwise(std::move(steps));
  }

 private:
  HostStep single(NodeId id, std::int32_t kernel) const {
    HostStep step;
    step.kernel = kernel;
    step.nodes = {id};
    const graph::Node& node = graph_.node(id);
    if (node.op != OpKind::matmul) return step;
    step.kind = HostStepKind::gemm;
    step.operand_a = node.inputs[0];
    step.operand_b = node.inputs[1];
    step.result = id;
    return step;
  }

  bool inside_kernel(NodeId id) const {
    return memory_.buffer_of[static_cast<std::size_t>(id)] < 0;
  }

  const graph::TensorType& type(NodeId id) const { return graph_.node(id).type; }

  // Whether two values share memory when the step runs: values with buffers where their bytes
  // meet in the arena; a value inside a kernel has its own place in the kernel's scratch.
  bool overlaps(NodeId a, NodeId b) const {
    std::int64_t a_bytes = type(a).byte_size();
    std::int64_t b_bytes = type(b).byte_size();
    if (a == b) return a_bytes > 0;
    if (inside_kernel(a) || inside_kernel(b)) return false;
    std::int64_t a_offset = buffer_offset(a);
    std::int64_t b_offset = buffer_offset(b);
    return a_offset < b_offset + b_bytes && b_offset < a_offset + a_bytes;
  }

  std::int64_t buffer_offset(NodeId id) const {
    auto buffer = static_cast<std::size_t>(memory_.buffer_of[static_cast<std::size_t>(id)]);
    return memory_.buffers[buffer].offset;
  }

  void fold_transposes(std::vector<HostStep>& steps) const {
    for (HostStep& step : steps) {
      if (step.kind != HostStepKind::gemm) continue;
      fold_transpose(step, step.operand_a, step.transposed_a);
      fold_transpose(step, step.operand_b, step.transposed_b);
    }
  }

  void fold_transpose(HostStep& step, NodeId& operand, bool& transposed) const {
    const graph::Node& source = graph_.node(operand);
    bool foldable = source.op == OpKind::transpose &&
                    graph::swaps_last_two_axes(source.attrs.perm) &&
                    users_.sole_user(operand) == step.nodes.front() && inside_kernel(operand);
    if (!foldable) return;
    step.folded.push_back(operand);
    operand = source.inputs[0];
    transposed = true;
  }

  // A gemm reads a convolution's windows (fuse-matmul put them in its kernel) formed from their
  // source a tile at a time: the reshape that views them as matrices and the windows are folded.
  void fold_windows(std::vector<HostStep>& steps) const {
    for (HostStep& step : steps) {
      if (step.kind != HostStepKind::gemm) continue;
      const graph::Node& reshape = graph_.node(step.operand_b);
      if (reshape.op != OpKind::reshape || !inside_kernel(step.operand_b)) continue;
      NodeId windows = reshape.inputs[0];
      if (graph_.node(windows).op != OpKind::windows || !inside_kernel(windows)) continue;
      step.folded.push_back(step.operand_b);
      step.folded.push_back(windows);
      step.windows = windows;
      step.windows_tile = windows_tile(reshape.type.shape);
      step.operand_b = graph_.node(windows).inputs[0];
    }
  }

  // A gemm whose product, a convolution's windows' gradient (fuse-matmul put the reshape and the
  // windows_sum in its kernel), it sums onto the windows' source a tile at a time: both folded,
  // the sum the step's result.
  void fold_windows_sums(std::vector<HostStep>& steps) const {
    for (HostStep& step : steps) {
      if (step.kind != HostStepKind::gemm || !inside_kernel(step.result)) continue;
      NodeId reshape = users_.sole_user(step.result);
      if (reshape < 0 || graph_.node(reshape).op != OpKind::reshape || !inside_kernel(reshape))
        continue;
      NodeId sum = users_.sole_user(reshape);
      if (sum < 0 || graph_.node(sum).op != OpKind::windows_sum || inside_kernel(sum)) continue;
      step.folded.push_back(reshape);
      step.folded.push_back(sum);
      step.windows_sum = sum;
      step.windows_tile = windows_tile(type(step.result).shape);
      step.result = sum;
    }
  }

  // The columns of the windows' matrices [..., rows, columns] a tile takes: about 512 KiB of f32
  // values, so that a tile is formed and multiplied while it is in a core's L2 cache; at least 64
  // columns, a multiple of 16 short of all of them.
  static std::int64_t windows_tile(const graph::Shape& matrices) {
    constexpr std::int64_t kTileFloats = 1 << 17;
    std::int64_t rows = std::max<std::int64_t>(matrices[matrices.size() - 2], 1);
    std::int64_t columns = std::max<std::int64_t>(matrices.back(), 1);
    std::int64_t tile = std::max<std::int64_t>(kTileFloats / rows / 16 * 16, 64);
    return std::min(tile, columns);
  }

  // Whether `bias` is one f32 value per column of `product` and `sum`, their sum, is f32 and
  // shaped as the product.
  bool adds_a_row(NodeId bias, NodeId product, NodeId sum) const {
    const graph::TensorType& addend = type(bias);
    const graph::TensorType& rows = type(product);
    if (addend.dtype != graph::DType::f32 || type(sum).dtype != graph::DType::f32) return false;
    if (addend.rank() == 0 || graph::element_count(addend.shape) != addend.shape.back())
      return false;
    return addend.shape.back() == rows.shape.back() && type(sum).shape == rows.shape;
  }

  void fold_bias_adds(std::vector<HostStep>& steps) const {
    for (HostStep& step : steps) {
      NodeId product = step.nodes.front();
      if (step.kind != HostStepKind::gemm || type(product).dtype != graph::DType::f32) continue;
      NodeId user = users_.sole_user(product);
      if (user < 0 || !inside_kernel(product)) continue;
      bool in_kernel = std::any_of(steps.begin(), steps.end(), [user](const HostStep& other) {
        return other.nodes[0] == user;
      });
      if (!in_kernel || graph_.node(user).op != OpKind::add) continue;
      const graph::Node& add = graph_.node(user);
      NodeId bias = add.inputs[0] == product ? add.inputs[1] : add.inputs[0];
      if (!adds_a_row(bias, product, user) || overlaps(user, bias) ||
          overlaps(user, step.operand_a) || overlaps(user, step.operand_b))
        continue;
      step.bias = bias;
      step.result = user;
      step.folded.push_back(user);
    }
  }

  // A softmax kernel's cast of the softmax's result, or of a dropout of it that only the cast
  // reads, is written by the softmax's step; the dropped-out values are kept per row.
  void fold_rounded_copies(std::vector<HostStep>& steps) const {
    for (HostStep& step : steps) {
      NodeId softmax = step.nodes.front();
      if (step.kind != HostStepKind::node || graph_.node(softmax).op != OpKind::softmax) continue;
      for (const HostStep& other : steps) {
        const graph::Node& cast = graph_.node(other.nodes.front());
        if (cast.op != OpKind::cast) continue;
        NodeId source = cast.inputs[0];
        if (source != softmax && !drops_out(source, softmax)) continue;
        step.rounded = other.nodes.front();
        step.folded.push_back(step.rounded);
        if (source == softmax) continue;
        step.dropout = source;
        step.folded.push_back(source);
        step.chunk_local.push_back(source);
      }
    }
  }

  // A softmax_grad kernel's dropout that computes the gradient's upstream operand, which nothing
  // outside the kernel reads, is applied by the gradient's step to each row it reads; the
  // dropped-out rows are kept per row.
  void fold_upstream_dropouts(std::vector<HostStep>& steps) const {
    for (HostStep& step : steps) {
      const graph::Node& gradient = graph_.node(step.nodes.front());
      if (step.kind != HostStepKind::node || gradient.op != OpKind::softmax_grad) continue;
      // A value without a buffer is read only inside the kernel that computes it: this one.
      NodeId upstream = gradient.inputs[1];
      const graph::Node& node = graph_.node(upstream);
      if (node.op != OpKind::dropout || node.type != gradient.type || !inside_kernel(upstream))
        continue;
      step.upstream_dropout = upstream;
      step.folded.push_back(upstream);
      step.chunk_local.push_back(upstream);
    }
  }

  // Whether `id` is a dropout of `softmax`'s f32 result that nothing outside its kernel reads.
  bool drops_out(NodeId id, NodeId softmax) const {
    const graph::Node& node = graph_.node(id);
    return node.op == OpKind::dropout && node.inputs[0] == softmax &&
           node.type.dtype == DType::f32 && inside_kernel(id);
  }

  // A softmax's or softmax_grad's elementwise nodes in its kernel (but folded rounded copies) run
  // row by row with it: a softmax's those before it, the last of which it reads, when none is
  // stored; a softmax_grad's those after it, when the gradient is not stored and the first of
  // them reads it. Those without a buffer are kept one row at a time.
  void fold_row_chains(std::vector<HostStep>& steps) const {
    for (HostStep& host : steps) {
      if (host.kind == HostStepKind::node && runs_row_chain(graph_.node(host.nodes.front())))
        fold_row_chain(host, steps);
    }
  }

  void fold_row_chain(HostStep& host, const std::vector<HostStep>& steps) const {
    NodeId kernel_node = host.nodes.front();
    const graph::Node& node = graph_.node(kernel_node);
    bool softmax = node.op == OpKind::softmax;
    auto rounded_copy = [&](NodeId id) {
      return std::any_of(steps.begin(), steps.end(),
                         [id](const HostStep& step) { return step.rounded == id; });
    };
    std::vector<NodeId> chain;
    for (const HostStep& step : steps) {
      NodeId id = step.nodes.front();
      if (!rounded_copy(id) && (softmax ? id < kernel_node : id > kernel_node) &&
          graph::op_class(graph_.node(id).op) == graph::OpClass::elementwise)
        chain.push_back(id);
    }
    if (chain.empty()) return;
    const std::vector<NodeId>& first_read = graph_.node(chain.front()).inputs;
    bool all_inside =
        std::all_of(chain.begin(), chain.end(), [&](NodeId id) { return inside_kernel(id); });
    bool foldable = softmax ? all_inside && chain.back() == node.inputs.front()
                            : inside_kernel(kernel_node) &&
                                  std::find(first_read.begin(), first_read.end(), kernel_node) !=
                                      first_read.end();
    if (!foldable) return;
    host.row_chain = chain;
    if (!softmax) host.chunk_local.push_back(kernel_node);
    for (NodeId id : chain) {
      if (inside_kernel(id)) host.chunk_local.push_back(id);
    }
  }

  // A kernel of a softmax and its gradient (fuse-softmax joined them: attention's probabilities
  // made again for the backward pass) runs as the gradient's step, which computes the softmax's
  // rows, through its input's row chain, into a row buffer and rounds them into its copy there:
  // where only the gradient and that copy read the softmax, it is never stored.
  void fold_softmax_into_gradient(std::vector<HostStep>& steps) const {
    auto row_step = [&](OpKind op) {
      return std::find_if(steps.begin(), steps.end(), [&](const HostStep& step) {
        const graph::Node& node = graph_.node(step.nodes.front());
        return step.kind == HostStepKind::node && node.op == op && runs_row_chain(node);
      });
    };
    auto softmax = row_step(OpKind::softmax);
    auto gradient = row_step(OpKind::softmax_grad);
    if (softmax == steps.end() || gradient == steps.end()) return;
    NodeId probabilities = softmax->nodes.front();
    NodeId input = graph_.node(probabilities).inputs.front();
    bool input_read =
        softmax->row_chain.empty() ? !inside_kernel(input) : softmax->row_chain.back() == input;
    std::span<const NodeId> readers = users_.of(probabilities);
    bool only_gradient_reads = std::all_of(readers.begin(), readers.end(), [&](NodeId reader) {
      return reader == gradient->nodes.front() ||
             reader == (softmax->dropout >= 0 ? softmax->dropout : softmax->rounded);
    });
    if (graph_.node(gradient->nodes.front()).inputs.front() != probabilities ||
        !inside_kernel(probabilities) || !input_read || !only_gradient_reads)
      return;
    gradient->row_softmax = probabilities;
    gradient->softmax_chain = softmax->row_chain;
    gradient->rounded = softmax->rounded;
    gradient->dropout = softmax->dropout;
    gradient->folded.push_back(probabilities);
    gradient->folded.insert(gradient->folded.end(), softmax->folded.begin(), softmax->folded.end());
    std::vector<NodeId> local = softmax->chunk_local;
    local.push_back(probabilities);
    gradient->chunk_local.insert(gradient->chunk_local.begin(), local.begin(), local.end());
  }

  // A softmax whose f32 result only its rounded copy reads (an eval step's attention) computes
  // each row into a row buffer and rounds it into the copy: the f32 result is never stored whole.
  void keep_rounded_softmax_rows(std::vector<HostStep>& steps) const {
    for (HostStep& step : steps) {
      NodeId softmax = step.nodes.front();
      NodeId copy = step.dropout >= 0 ? step.dropout : step.rounded;
      if (step.kind != HostStepKind::node || step.rounded < 0 ||
          !runs_row_chain(graph_.node(softmax)) || !inside_kernel(softmax) ||
          users_.sole_user(softmax) != copy)
        continue;
      step.chunk_local.push_back(softmax);
    }
  }

  // Whether a node can join a chain over `count` elements: its operands are read a chunk at a
  // time, those it broadcasts through a copy of the chunk's elements (graph::flat_broadcast).
  bool fits_chain(const HostStep& step, std::int64_t count) const {
    if (step.kind != HostStepKind::node) return false;
    const graph::Node& node = graph_.node(step.nodes.front());
    if (graph::op_class(node.op) != graph::OpClass::elementwise ||
        graph::element_count(node.type.shape) != count)
      return false;
    return std::all_of(node.inputs.begin(), node.inputs.end(), [&](NodeId input) {
      return graph::flat_broadcast(type(input).shape, node.type.shape).has_value();
    });
  }

  // Whether a node that fits a chain reads an operand it broadcasts (not a single value).
  bool broadcasts(const HostStep& step) const {
    const graph::Node& node = graph_.node(step.nodes.front());
    std::int64_t count = graph::element_count(node.type.shape);
    return std::any_of(node.inputs.begin(), node.inputs.end(), [&](NodeId input) {
      return !graph::flat_broadcast(type(input).shape, node.type.shape)->in_place(count);
    });
  }

  // A lone node runs as a chain when it is large enough to split across the cores, unless it
  // broadcasts: its node kernel reads such operands in place, a chain copies them chunk by chunk.
  bool lone_chain(const HostStep& step, std::int64_t count) const {
    return count >= kLoneChainElements && !broadcasts(step);
  }

  // Whether `step` is a full sum of an f32 value computed by `chain`: the chain can take it as it
  // goes, a chunk at a time.
  bool sums_chain_value(const HostStep& step, const std::vector<NodeId>& chain) const {
    if (step.kind != HostStepKind::node) return false;
    const graph::Node& node = graph_.node(step.nodes.front());
    if (node.inputs.empty() || !chain_sums(node.op, type(node.inputs.front()).dtype,
                                           node.type.dtype, graph::element_count(node.type.shape)))
      return false;
    return std::find(chain.begin(), chain.end(), node.inputs.front()) != chain.end();
  }

  // Whether `step` reads one of the sums a chain takes: those are whole only after the chain.
  bool reads_sum(const HostStep& step, const std::vector<NodeId>& sums) const {
    const std::vector<NodeId>& inputs = graph_.node(step.nodes.front()).inputs;
    return std::any_of(inputs.begin(), inputs.end(), [&](NodeId input) {
      return std::find(sums.begin(), sums.end(), input) != sums.end();
    });
  }

  // The steps from `begin` that one chain runs: elementwise nodes and sums of their values, the
  // sums taken at the end of the chain wherever they lie among the nodes.
  HostStep gather_chain(const std::vector<HostStep>& steps, std::size_t begin,
                        std::int64_t count) const {
    HostStep chain;
    for (std::size_t next = begin; next < steps.size(); ++next) {
      NodeId id = steps[next].nodes.front();
      if (fits_chain(steps[next], count) && !reads_sum(steps[next], chain.sums)) {
        chain.nodes.push_back(id);
      } else if (chain.sums.size() < kMaxChainSums && sums_chain_value(steps[next], chain.nodes)) {
        chain.sums.push_back(id);
      } else {
        break;
      }
    }
    return chain;
  }

  std::vector<HostStep> chain_elementwise(std::vector<HostStep> steps) const {
    std::vector<HostStep> result;
    for (std::size_t begin = 0; begin < steps.size();) {
      std::int64_t count = graph::element_count(type(steps[begin].nodes.front()).shape);
      HostStep chain = gather_chain(steps, begin, count);
      bool lone = chain.nodes.size() == 1 && chain.sums.empty() && !lone_chain(steps[begin], count);
      if (chain.nodes.empty() || lone) {
        result.push_back(std::move(steps[begin++]));
        continue;
      }
      chain.kind = HostStepKind::chain;
      chain.kernel = steps[begin].kernel;
      chain.chunk_local = chunk_local(chain);
      chain.in_registers = in_registers(chain);
      begin += chain.nodes.size() + chain.sums.size();
      result.push_back(std::move(chain));
    }
    return result;
  }

  // A lone node has no intermediate values to keep, unless the chain sums it: its own kernel
  // streams it once.
  bool in_registers(const HostStep& chain) const {
    return (chain.nodes.size() > 1 || !chain.sums.empty()) &&
           std::all_of(chain.nodes.begin(), chain.nodes.end(),
                       [&](NodeId id) { return runs_in_registers(id); });
  }

  // Whether a chain's node is one a register chain computes. Its operands broadcast as a chain's
  // may.
  bool runs_in_registers(NodeId id) const {
    const graph::Node& node = graph_.node(id);
    std::vector<DType> operands;
    for (NodeId input : node.inputs)
      operands.push_back(type(input).dtype);
    return computes_in_registers(node, operands);
  }

  // The nodes of a chain whose values live inside the kernel and only the chain (its nodes and
  // sums) reads.
  std::vector<NodeId> chunk_local(const HostStep& chain) const {
    std::vector<NodeId> local;
    auto in_chain = [&](NodeId id) {
      return std::find(chain.nodes.begin(), chain.nodes.end(), id) != chain.nodes.end() ||
             std::find(chain.sums.begin(), chain.sums.end(), id) != chain.sums.end();
    };
    for (NodeId id : chain.nodes) {
      std::span<const NodeId> readers = users_.of(id);
      if (inside_kernel(id) && !users_.escapes(id) &&
          std::all_of(readers.begin(), readers.end(), in_chain))
        local.push_back(id);
    }
    return local;
  }

  const graph::Graph& graph_;
  const MemoryPlan& memory_;
  NodeUsers users_;
};

std::string node_ref(NodeId id) {
  return "%" + std::to_string(id);
}

}  // namespace

const char* host_step_kind_name(HostStepKind kind) {
  switch (kind) {
    case HostStepKind::node:
      return "node";
    case HostStepKind::gemm:
      return "gemm";
    case HostStepKind::chain:
      return "chain";
  }
  return "?";
}

std::string host_step_call(const HostStep& step) {
  std::string call = host_step_kind_name(step.kind);
  if (step.kind == HostStepKind::chain) call += std::to_string(step.nodes.size());
  if (step.row_softmax >= 0) call += "+softmax";
  if (step.dropout >= 0) call += "+dropout";
  if (step.upstream_dropout >= 0) call += "+upstream_dropout";
  if (!step.row_chain.empty() || step.row_softmax >= 0)
    call += "+chain" + std::to_string(step.row_chain.size() + step.softmax_chain.size()) + "@rows";
  if (!step.sums.empty()) call += "+sum";
  if (step.sums.size() > 1) call += std::to_string(step.sums.size());
  if (step.in_registers) call += "@registers";
  if (step.bias >= 0) call += "+bias";
  if (step.windows >= 0) call += "+windows";
  if (step.windows_sum >= 0) call += "+windows_sum";
  if (step.transposed_a || step.transposed_b) call += "^T";
  return call;
}

std::vector<HostStep> lower_host(const graph::Graph& graph, std::span<const Kernel> kernels,
                                 const MemoryPlan& memory) {
  HostLowering lowering(graph, memory);
  std::vector<HostStep> steps;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    for (HostStep& step : lowering.lower(kernels[k], static_cast<std::int32_t>(k)))
      steps.push_back(std::move(step));
  }
  return steps;
}

std::string host_steps_text(const Plan& plan) {
  auto named = [&](NodeId id) {
    return node_ref(id) + " " + graph::op_name(plan.graph.node(id).op);
  };
  std::string text;
  for (const HostStep& step : plan.host_steps) {
    text += "k" + std::to_string(step.kernel) + " " +
            plan.kernels[static_cast<std::size_t>(step.kernel)].name + ": " +
            host_step_kind_name(step.kind) + " ";
    if (step.kind == HostStepKind::gemm) {
      std::string b = node_ref(step.operand_b);
      if (step.windows >= 0)
        b = "windows(" + b + ", " + std::to_string(step.windows_tile) + " columns a tile)";
      text += node_ref(step.nodes.front()) + " (" + node_ref(step.operand_a) +
              (step.transposed_a ? "^T" : "") + ", " + b + (step.transposed_b ? "^T" : "") + ")";
      if (step.bias >= 0) text += " + " + node_ref(step.bias);
      if (step.windows_sum >= 0)
        text += " summed onto windows, " + std::to_string(step.windows_tile) + " columns a tile,";
      text += " -> " + node_ref(step.result);
    } else {
      for (std::size_t i = 0; i < step.nodes.size(); ++i)
        text += (i > 0 ? ", " : "") + named(step.nodes[i]);
    }
    bool reads_chain =
        !step.row_chain.empty() && plan.graph.node(step.nodes.front()).op == graph::OpKind::softmax;
    if (step.row_softmax >= 0) {
      text += " [its " + named(step.row_softmax) + " by rows";
      for (std::size_t i = 0; i < step.softmax_chain.size(); ++i)
        text += (i > 0 ? ", " : ", of ") + named(step.softmax_chain[i]);
      text += "]";
    }
    for (std::size_t i = 0; i < step.row_chain.size(); ++i)
      text += (i > 0         ? ", "
               : reads_chain ? " [its input by rows: "
                             : " [then by rows: ") +
              named(step.row_chain[i]);
    text += step.row_chain.empty() ? "" : "]";
    for (std::size_t i = 0; i < step.folded.size(); ++i)
      text += (i == 0 ? " [folds " : ", ") + named(step.folded[i]);
    text += step.folded.empty() ? "" : "]";
    if (step.upstream_dropout >= 0)
      text += " [drops its upstream out as " + node_ref(step.upstream_dropout) + "]";
    if (step.dropout >= 0) text += " [drops out as " + node_ref(step.dropout) + "]";
    if (step.rounded >= 0) text += " [rounds into " + node_ref(step.rounded) + "]";
    for (std::size_t i = 0; i < step.sums.size(); ++i)
      text += (i == 0 ? " [sums as it goes: " : ", ") + named(step.sums[i]);
    text += step.sums.empty() ? "" : "]";
    std::string local;
    for (std::size_t i = 0; i < step.chunk_local.size(); ++i)
      local += (i == 0 ? "" : ", ") + node_ref(step.chunk_local[i]);
    if (!step.row_chain.empty() || step.row_softmax >= 0) {
      text += local.empty() ? "" : " [per row: " + local + "]";
    } else if (step.in_registers) {
      text += " [in registers" + (local.empty() ? "" : ": " + local) + "]";
    } else if (!local.empty()) {
      text += " [per chunk " + local + "]";
    }
    text += "\n";
  }
  return text;
}

}  // namespace csrun::compiler

#include "kernel_matching.hpp"

#include <algorithm>
#include <optional>

#include "fusion_groups.hpp"
#include "kernel_library.hpp"
#include "node_users.hpp"
#include "static_values.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;

bool is_leaf(const graph::Node& node) {
  return graph::op_class(node.op) == graph::OpClass::leaf;
}

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines)
    text += (text.empty() ? "" : "\n") + line;
  return text;
}

int rank_limit(const KernelSpec& spec, const OpRule& rule) {
  return rule.max_rank > 0 ? rule.max_rank : spec.max_rank;
}

// Why `rule` of `spec` cannot run node `id`, or nothing when it can.
std::optional<std::string> mismatch(const KernelSpec& spec, const OpRule& rule,
                                    const graph::Graph& graph, NodeId id) {
  const graph::Node& node = graph.node(id);
  std::int64_t rank = node.type.rank();
  for (NodeId input : node.inputs) {
    const graph::TensorType& type = graph.node(input).type;
    rank = std::max(rank, type.rank());
    if (!rule.operands.contains(type.dtype))
      return "operands " + rule.operands.to_string() + ", not " + graph::dtype_name(type.dtype);
  }
  if (!rule.results.contains(node.type.dtype))
    return "results " + rule.results.to_string() + ", not " + graph::dtype_name(node.type.dtype);
  int max_rank = rank_limit(spec, rule);
  if (rank > max_rank)
    return "rank " + std::to_string(max_rank) + " at most, not " + std::to_string(rank);
  if (rule.last_axis_only) {
    std::int64_t axis = node.attrs.axis < 0 ? node.attrs.axis + rank : node.attrs.axis;
    if (axis != node.type.rank() - 1)
      return "the last axis only, not axis " + std::to_string(node.attrs.axis);
  }
  return std::nullopt;
}

std::string rule_text(const KernelSpec& spec, const OpRule& rule) {
  std::string text = std::string(spec.name) + " (operands " + rule.operands.to_string() +
                     "; results " + rule.results.to_string() +
                     "; rank <= " + std::to_string(rank_limit(spec, rule));
  return text + (rule.last_axis_only ? "; last axis only)" : ")");
}

class Matcher {
 public:
  explicit Matcher(const Program& program)
      : program_(program),
        graph_(program.graph),
        users_(program.graph),
        static_(static_values(program.graph)) {}

  std::vector<Kernel> run() {
    std::vector<std::int32_t> fusion_of(graph_.size(), -1);
    for (std::size_t f = 0; f < program_.fusions.size(); ++f) {
      for (NodeId id : program_.fusions[f].nodes)
        fusion_of[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(f);
    }
    // Kernels of static values run first (at load), then the step's in order of their first
    // node, which the fusion invariant makes a valid order (fusion_groups.hpp).
    std::vector<Kernel> kernels;
    for (bool at_load : {true, false}) {
      for (std::size_t i = 0; i < graph_.size(); ++i) {
        if (static_[i] == at_load) add_node(kernels, static_cast<NodeId>(i), fusion_of);
      }
    }
    if (!problems_.empty()) throw KernelMatchError(problems_);
    check_schedule(kernels);
    return kernels;
  }

 private:
  void add_node(std::vector<Kernel>& kernels, NodeId id,
                const std::vector<std::int32_t>& fusion_of) {
    if (is_leaf(graph_.node(id))) return;
    std::int32_t fusion = fusion_of[static_cast<std::size_t>(id)];
    if (fusion < 0) {
      add(kernels, match_single(id), {id});
    } else if (program_.fusions[static_cast<std::size_t>(fusion)].nodes.front() == id) {
      const Fusion& group = program_.fusions[static_cast<std::size_t>(fusion)];
      add(kernels, match_fusion(group), group.nodes);
    }
  }

  std::string where(NodeId id) const {
    const graph::Node& node = graph_.node(id);
    std::string scope = graph_.scope_name(node.scope);
    return (scope.empty() ? "" : " in " + scope) + " (built at " + node.location.to_string() + ")";
  }

  void refuse(NodeId id, const std::string& detail) {
    problems_.push_back("no kernel runs " + node_signature(graph_, id) + where(id) + ": " + detail);
  }

  std::string supported(graph::OpKind op) const {
    std::vector<std::string> offers;
    for (const KernelSpec& spec : kernel_library()) {
      if (const OpRule* rule = spec.rule(op)) offers.push_back(rule_text(spec, *rule));
    }
    if (offers.empty()) return "the kernel library has nothing for " + std::string(op_name(op));
    std::string text = "the library runs " + std::string(op_name(op)) + " in ";
    for (std::size_t i = 0; i < offers.size(); ++i)
      text += (i ? ", " : "") + offers[i];
    return text;
  }

  std::string match_single(NodeId id) {
    graph::OpKind op = graph_.node(id).op;
    std::vector<std::string> reasons;
    for (const KernelSpec& spec : kernel_library()) {
      const OpRule* rule = spec.runs_alone(op) ? spec.rule(op) : nullptr;
      if (!rule) continue;
      std::optional<std::string> why = mismatch(spec, *rule, graph_, id);
      if (!why) return std::string(spec.name);
      reasons.push_back(std::string(spec.name) + " takes " + *why);
    }
    refuse(id, (reasons.empty() ? "" : joined_lines(reasons) + "; ") + supported(op));
    return {};
  }

  std::string match_fusion(const Fusion& fusion) {
    for (const KernelSpec& spec : kernel_library()) {
      if (spec.pattern != fusion.pattern) continue;
      bool matched = true;
      for (NodeId id : fusion.nodes) {
        const OpRule* rule = spec.rule(graph_.node(id).op);
        std::optional<std::string> why =
            rule ? mismatch(spec, *rule, graph_, id)
                 : std::optional<std::string>(std::string(spec.name) + " does not run " +
                                              op_name(graph_.node(id).op));
        if (why) {
          refuse(id,
                 std::string(spec.name) + " takes " + *why + "; " + supported(graph_.node(id).op));
          matched = false;
        }
      }
      if (matched) return std::string(spec.name);
      return {};
    }
    refuse(fusion.nodes.back(), "no kernel executes " + fusion.pattern + " fusions");
    return {};
  }

  void add(std::vector<Kernel>& kernels, std::string name, std::vector<NodeId> nodes) {
    if (name.empty()) return;
    bool at_load = static_[static_cast<std::size_t>(nodes.front())];
    Kernel kernel{std::move(name), std::move(nodes), {}, {}, at_load};
    auto member = [&](NodeId id) {
      return std::binary_search(kernel.nodes.begin(), kernel.nodes.end(), id);
    };
    for (NodeId id : kernel.nodes) {
      std::span<const NodeId> readers = users_.of(id);
      bool read_outside = std::any_of(readers.begin(), readers.end(),
                                      [&](NodeId reader) { return !member(reader); });
      if (read_outside || users_.escapes(id)) kernel.results.push_back(id);
      for (NodeId input : graph_.node(id).inputs) {
        bool known = std::find(kernel.operands.begin(), kernel.operands.end(), input) !=
                     kernel.operands.end();
        if (!member(input) && !known) kernel.operands.push_back(input);
      }
    }
    kernels.push_back(std::move(kernel));
  }

  // Every kernel must come after the kernels whose results it reads. A view of a computed value
  // is that value's buffer, ready as soon as it is: a group may read such a reshape of an earlier
  // value that comes after the group's first node (FusionGroups).
  void check_schedule(const std::vector<Kernel>& kernels) const {
    std::vector<std::int32_t> position(graph_.size(), -1);
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      for (NodeId id : kernels[k].nodes)
        position[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(k);
    }
    for (const Kernel& kernel : kernels) {
      if (kernel_spec(kernel.name).cost != CostModel::view) continue;
      for (NodeId id : kernel.nodes) {
        if (views_computed_value(graph_, id))
          position[static_cast<std::size_t>(id)] =
              position[static_cast<std::size_t>(graph_.node(id).inputs[0])];
      }
    }
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      for (NodeId operand : kernels[k].operands) {
        if (position[static_cast<std::size_t>(operand)] >= static_cast<std::int32_t>(k))
          throw std::logic_error("kernel " + std::to_string(k) + " (" + kernels[k].name +
                                 ") reads %" + std::to_string(operand) + " before it is computed");
      }
    }
  }

  const Program& program_;
  const graph::Graph& graph_;
  NodeUsers users_;
  std::vector<bool> static_;
  std::vector<std::string> problems_;
};

}  // namespace

KernelMatchError::KernelMatchError(std::vector<std::string> problems)
    : std::runtime_error(joined_lines(problems)), problems_(std::move(problems)) {}

std::string node_signature(const graph::Graph& graph, NodeId id) {
  const graph::Node& node = graph.node(id);
  std::string text = std::string(graph::op_name(node.op)) + "(";
  for (std::size_t i = 0; i < node.inputs.size(); ++i)
    text += (i ? ", " : "") + graph.node(node.inputs[i]).type.to_string();
  return text + ") -> " + node.type.to_string();
}

std::vector<Kernel> match_kernels(const Program& program) {
  return Matcher(program).run();
}

}  // namespace csrun::compiler

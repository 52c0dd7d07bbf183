#include "layers.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace csrun::wafer {

namespace {

class LayerIndex {
 public:
  std::int32_t of(const std::string& name) {
    auto found = index_.find(name);
    if (found != index_.end()) return found->second;
    auto id = static_cast<std::int32_t>(map_.names.size());
    index_.emplace(name, id);
    map_.names.push_back(name);
    map_.parameters.push_back(0);
    map_.streamed.push_back(0);
    return id;
  }

  LayerMap& map() { return map_; }

 private:
  std::unordered_map<std::string, std::int32_t> index_;
  LayerMap map_;
};

// A weight a kernel streams in: a parameter, or the 16-bit copy its products read.
bool is_parameter(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  if (node.op != graph::OpKind::variable) return false;
  graph::VariableRole role = graph.find_variable(graph.leaf_name(id))->role;
  return role == graph::VariableRole::parameter || role == graph::VariableRole::half_copy;
}

// Elements of parameter `id` that kernel `kernel` needs: all of it, or for a gather the rows
// its indices can select.
std::int64_t needed_elements(const graph::Graph& graph, const compiler::Kernel& kernel,
                             graph::NodeId id) {
  std::int64_t all = graph::element_count(graph.node(id).type.shape);
  for (graph::NodeId member : kernel.nodes) {
    const graph::Node& node = graph.node(member);
    if (node.op != graph::OpKind::gather || node.inputs[0] != id) continue;
    const graph::Shape& table = graph.node(id).type.shape;
    std::int64_t row = table.empty() ? 1 : all / table.front();
    return std::min(all, graph::element_count(graph.node(node.inputs[1]).type.shape) * row);
  }
  return all;
}

void add_streamed(const compiler::Plan& plan, const std::vector<std::int32_t>& layer_of_kernel,
                  std::vector<std::int64_t>& streamed) {
  const graph::Graph& graph = plan.graph;
  std::map<std::pair<std::int32_t, graph::NodeId>, std::int64_t> needed;
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const compiler::Kernel& kernel = plan.kernels[k];
    if (kernel.at_load || graph.node(kernel.nodes.back()).phase == graph::Phase::update) continue;
    for (graph::NodeId operand : kernel.operands) {
      if (!is_parameter(graph, operand)) continue;
      std::int64_t& elements = needed[{layer_of_kernel[k], operand}];
      elements = std::max(elements, needed_elements(graph, kernel, operand));
    }
  }
  for (const auto& [key, elements] : needed)
    streamed[static_cast<std::size_t>(key.first)] += elements;
}

}  // namespace

std::string layer_name(std::string_view scope) {
  if (scope.empty()) return "(top level)";
  std::string_view listed = graph::listed_module(scope);
  if (!listed.empty()) return std::string(listed);
  std::size_t first_end = scope.find('.');
  if (first_end == std::string_view::npos) return std::string(scope);
  return std::string(scope.substr(0, scope.find('.', first_end + 1)));
}

LayerMap map_layers(const compiler::Plan& plan) {
  const graph::Graph& graph = plan.graph;
  std::vector<std::string> scope_layers;
  for (const std::string& scope : graph.scope_names())
    scope_layers.push_back(layer_name(scope));
  LayerIndex index;
  std::vector<std::int32_t> layer_of_kernel(plan.kernels.size(), -1);
  // Forward kernels first, so layers come in the order the forward pass reaches them.
  std::int32_t forward_layers = 0;
  for (bool forward : {true, false}) {
    if (!forward) forward_layers = static_cast<std::int32_t>(index.map().names.size());
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
      const graph::Node& root = graph.node(plan.kernels[k].nodes.back());
      // Kernels run at load come first in the plan but belong wherever their scope says.
      bool early = root.phase == graph::Phase::forward && !plan.kernels[k].at_load;
      if (early != forward) continue;
      layer_of_kernel[k] = index.of(scope_layers[static_cast<std::size_t>(root.scope)]);
    }
  }
  for (const graph::Variable& variable : graph.variables()) {
    if (variable.role != graph::VariableRole::parameter) continue;
    const graph::Node& node = graph.node(variable.node);
    auto layer =
        static_cast<std::size_t>(index.of(scope_layers[static_cast<std::size_t>(node.scope)]));
    index.map().parameters[layer] += graph::element_count(node.type.shape);
  }
  add_streamed(plan, layer_of_kernel, index.map().streamed);
  LayerMap map = std::move(index.map());
  map.layer_of_kernel = std::move(layer_of_kernel);
  map.forward_layers = forward_layers;
  return map;
}

}  // namespace csrun::wafer

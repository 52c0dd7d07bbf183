#include "model_definitions.hpp"

namespace csrun::models {

graph::Tensor ratio_metric(const std::vector<graph::Tensor>& numerators,
                           const std::vector<graph::Tensor>& denominators) {
  std::vector<graph::Tensor> rows;
  for (const std::vector<graph::Tensor>* row : {&numerators, &denominators}) {
    std::vector<graph::Tensor> parts;
    for (const graph::Tensor& value : *row)
      parts.push_back(graph::reshape(value, {1, 1}));
    rows.push_back(graph::concat(parts, 1));
  }
  return graph::concat(rows, 0);
}

}  // namespace csrun::models

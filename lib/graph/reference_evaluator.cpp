#include "reference_evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "counter_rng.hpp"
#include "elementwise_semantics.hpp"
#include "number_formats.hpp"

namespace csrun::graph {

namespace {

using Values = std::vector<double>;

std::vector<std::int64_t> strides_of(const Shape& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

// The strides that map a multi-index of a shape of rank `rank` to the flat position in `source`
// broadcast to it: an axis `source` lacks or holds once repeats, so its stride is 0.
std::vector<std::int64_t> broadcast_strides(const Shape& source, std::size_t rank) {
  std::vector<std::int64_t> own = strides_of(source);
  std::vector<std::int64_t> strides(rank, 0);
  std::size_t skip = rank - source.size();
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] != 1) strides[skip + i] = own[i];
  }
  return strides;
}

std::int64_t offset_of(const std::vector<std::int64_t>& index,
                       const std::vector<std::int64_t>& strides) {
  std::int64_t offset = 0;
  for (std::size_t k = 0; k < index.size(); ++k)
    offset += index[k] * strides[k];
  return offset;
}

// The multi-index of consecutive flat positions of a shape, in row-major order. The per-element
// loops step it instead of dividing a flat position and allocating an index for every element.
class Odometer {
 public:
  explicit Odometer(const Shape& shape) : shape_(shape), index_(shape.size(), 0) {}

  const std::vector<std::int64_t>& index() const { return index_; }
  void next() {
    for (std::size_t axis = shape_.size(); axis-- > 0;) {
      if (++index_[axis] < shape_[axis]) return;
      index_[axis] = 0;
    }
  }

 private:
  const Shape& shape_;
  std::vector<std::int64_t> index_;
};

// The values of `x` at first + offset_of(index, strides), for every multi-index of `shape` in
// order: a transpose, slice or broadcast, by its strides.
Values read_strided(const Values& x, const Shape& shape, const std::vector<std::int64_t>& strides,
                    std::int64_t first = 0) {
  Values out(static_cast<std::size_t>(element_count(shape)));
  Odometer position(shape);
  for (std::size_t i = 0; i < out.size(); ++i, position.next())
    out[i] = x[static_cast<std::size_t>(first + offset_of(position.index(), strides))];
  return out;
}

// The other way round: each value of `x` (of `shape`) to first + offset_of(index, strides) of
// `out`, as a pad or a concatenation places its operands.
void write_strided(const Values& x, const Shape& shape, const std::vector<std::int64_t>& strides,
                   std::int64_t first, Values& out) {
  Odometer position(shape);
  for (std::size_t i = 0; i < x.size(); ++i, position.next())
    out[static_cast<std::size_t>(first + offset_of(position.index(), strides))] = x[i];
}

// The flat position in `x` (of `shape`) that windows of extents `window` take for their element
// at `index` ([lead..., w, o...]): x[lead..., o + offset(w)].
std::int64_t window_source(const std::vector<std::int64_t>& index, const Shape& window,
                           const Shape& shape) {
  std::size_t lead = shape.size() - window.size();
  std::int64_t w = index[lead];
  std::vector<std::int64_t> position(index.begin(), index.begin() + static_cast<long>(lead));
  std::vector<std::int64_t> offsets(window.size());
  for (std::size_t a = window.size(); a-- > 0;) {
    offsets[a] = w % window[a];
    w /= window[a];
  }
  for (std::size_t a = 0; a < window.size(); ++a)
    position.push_back(index[lead + 1 + a] + offsets[a]);
  return offset_of(position, strides_of(shape));
}

// Values are kept in double precision (the evaluator is the fp64 oracle); only what a dtype
// cannot hold at all is rounded: integers, booleans, and the 16-bit formats of explicit casts.
double store(DType dtype, double value) {
  switch (dtype) {
    case DType::f32:
      return value;
    case DType::i32:
      return to_i32(value);
    case DType::boolean:
      return value != 0.0 ? 1.0 : 0.0;
    default:
      return round_to_format(value, format_of(dtype));
  }
}

class Evaluator {
 public:
  Evaluator(const Graph& graph, const Feeds& feeds) : graph_(graph), feeds_(feeds) {}

  // Evaluates what `targets` need, in node order (which is topological), without recursion.
  void run(std::span<const NodeId> targets) {
    values_.assign(graph_.size(), HostTensor{});
    std::vector<bool> needed(graph_.size(), false);
    std::vector<NodeId> pending(targets.begin(), targets.end());
    while (!pending.empty()) {
      NodeId id = pending.back();
      pending.pop_back();
      if (needed.at(static_cast<std::size_t>(id))) continue;
      needed[static_cast<std::size_t>(id)] = true;
      for (NodeId input : graph_.node(id).inputs)
        pending.push_back(input);
    }
    for (std::size_t i = 0; i < needed.size(); ++i) {
      if (!needed[i]) continue;
      const Node& node = graph_.nodes()[i];
      HostTensor result;
      result.shape = node.type.shape;
      result.dtype = node.type.dtype;
      result.values = compute(static_cast<NodeId>(i), node);
      for (double& v : result.values)
        v = store(result.dtype, v);
      values_[i] = std::move(result);
    }
  }

  const HostTensor& value(NodeId id) const { return values_.at(static_cast<std::size_t>(id)); }

 private:
  const HostTensor& in(const Node& node, std::size_t i) {
    return values_.at(static_cast<std::size_t>(node.inputs.at(i)));
  }

  Values compute(NodeId id, const Node& node) {
    if (is_unary_elementwise(node.op)) {
      Values out = in(node, 0).values;
      for (double& v : out)
        v = unary_value(node.op, v, node.attrs.approximate);
      return out;
    }
    if (is_binary_elementwise(node.op) || node.op == OpKind::where) return elementwise(node);
    switch (node.op) {
      case OpKind::input:
      case OpKind::variable:
        return fed(id, node);
      case OpKind::constant:
        return constant(node);
      case OpKind::iota:
        return iota(node);
      case OpKind::reduce_sum:
      case OpKind::reduce_mean:
      case OpKind::reduce_max:
        return reduce(node);
      case OpKind::argmax:
        return argmax(node);
      case OpKind::reshape:
        return in(node, 0).values;
      case OpKind::transpose:
        return transpose(node);
      case OpKind::slice:
        return slice(node);
      case OpKind::pad:
        return pad(node);
      case OpKind::concat:
        return concat(node);
      case OpKind::broadcast_to:
        return broadcast(node);
      case OpKind::windows:
        return windows(node);
      case OpKind::windows_sum:
        return windows_sum(node);
      case OpKind::matmul:
        return matmul(node);
      case OpKind::softmax:
      case OpKind::log_softmax:
        return softmax(node);
      case OpKind::softmax_grad:
        return softmax_grad(node);
      case OpKind::softmax_cross_entropy:
      case OpKind::softmax_cross_entropy_grad:
        return cross_entropy(node);
      case OpKind::layer_norm:
        return layer_norm(node);
      case OpKind::gather:
        return gather(node);
      case OpKind::scatter_add:
        return scatter_add(node);
      case OpKind::one_hot:
        return one_hot(node);
      case OpKind::dropout:
        return dropout(node);
      default:
        throw std::logic_error(std::string("no reference for ") + op_name(node.op));
    }
  }

  Values fed(NodeId id, const Node& node) {
    std::string name = graph_.leaf_name(id);
    auto feed = feeds_.find(name);
    if (feed == feeds_.end()) throw std::invalid_argument("no value fed for " + name);
    if (feed->second.shape != node.type.shape ||
        feed->second.values.size() != static_cast<std::size_t>(element_count(node.type.shape))) {
      throw std::invalid_argument("the value fed for " + name + " is " +
                                  shape_string(feed->second.shape) + ", not " +
                                  node.type.to_string());
    }
    return feed->second.values;
  }

  Values constant(const Node& node) {
    std::int64_t count = element_count(node.type.shape);
    if (node.attrs.values.size() == 1)
      return Values(static_cast<std::size_t>(count), node.attrs.values[0]);
    return node.attrs.values;
  }

  Values iota(const Node& node) {
    Values out(static_cast<std::size_t>(element_count(node.type.shape)));
    Odometer at(node.type.shape);
    for (std::size_t i = 0; i < out.size(); ++i, at.next())
      out[i] = static_cast<double>(at.index()[static_cast<std::size_t>(node.attrs.axis)]);
    return out;
  }

  Values elementwise(const Node& node) {
    std::size_t rank = node.type.shape.size();
    std::vector<const Values*> operands;
    std::vector<std::vector<std::int64_t>> strides;
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      operands.push_back(&in(node, k).values);
      strides.push_back(broadcast_strides(in(node, k).shape, rank));
    }
    bool integers = in(node, 0).dtype == DType::i32;
    Values out(static_cast<std::size_t>(element_count(node.type.shape)));
    Odometer position(node.type.shape);
    for (std::size_t i = 0; i < out.size(); ++i, position.next()) {
      auto at = [&](std::size_t k) {
        return (*operands[k])[static_cast<std::size_t>(offset_of(position.index(), strides[k]))];
      };
      out[i] = node.op == OpKind::where ? (at(0) != 0.0 ? at(1) : at(2))
                                        : binary_value(node.op, at(0), at(1), integers);
    }
    return out;
  }

  Values reduce(const Node& node) {
    const HostTensor& x = in(node, 0);
    Shape kept = x.shape;
    for (std::int64_t axis : node.attrs.axes)
      kept[axis] = 1;
    double initial = node.op == OpKind::reduce_max ? -std::numeric_limits<double>::infinity() : 0.0;
    Values out(static_cast<std::size_t>(element_count(kept)), initial);
    std::vector<std::int64_t> strides = strides_of(kept);
    for (std::int64_t axis : node.attrs.axes)
      strides[static_cast<std::size_t>(axis)] = 0;
    Odometer position(x.shape);
    for (std::size_t i = 0; i < x.values.size(); ++i, position.next()) {
      double& slot = out[static_cast<std::size_t>(offset_of(position.index(), strides))];
      slot = node.op == OpKind::reduce_max ? std::max(slot, x.values[i]) : slot + x.values[i];
    }
    if (node.op == OpKind::reduce_mean) {
      double count = static_cast<double>(x.values.size()) / static_cast<double>(out.size());
      for (double& v : out)
        v /= count;
    }
    return out;
  }

  Values argmax(const Node& node) {
    const HostTensor& x = in(node, 0);
    std::int64_t axis = node.attrs.axis;
    std::int64_t length = x.shape[axis];
    std::int64_t inner = strides_of(x.shape)[axis];
    Values out(static_cast<std::size_t>(element_count(node.type.shape)));
    for (std::size_t o = 0; o < out.size(); ++o) {
      std::int64_t outer = static_cast<std::int64_t>(o) / inner;
      std::int64_t base = outer * length * inner + static_cast<std::int64_t>(o) % inner;
      std::int64_t best = 0;
      for (std::int64_t k = 1; k < length; ++k) {
        if (x.values[base + k * inner] > x.values[base + best * inner]) best = k;
      }
      out[o] = static_cast<double>(best);
    }
    return out;
  }

  Values transpose(const Node& node) {
    const HostTensor& x = in(node, 0);
    std::vector<std::int64_t> strides = strides_of(x.shape);
    std::vector<std::int64_t> permuted;
    for (std::int64_t axis : node.attrs.perm)
      permuted.push_back(strides[static_cast<std::size_t>(axis)]);
    return read_strided(x.values, node.type.shape, permuted);
  }

  Values slice(const Node& node) {
    const HostTensor& x = in(node, 0);
    std::vector<std::int64_t> strides = strides_of(x.shape);
    return read_strided(x.values, node.type.shape, strides, offset_of(node.attrs.begins, strides));
  }

  Values pad(const Node& node) {
    const HostTensor& x = in(node, 0);
    std::vector<std::int64_t> strides = strides_of(node.type.shape);
    Values out(static_cast<std::size_t>(element_count(node.type.shape)), 0.0);
    write_strided(x.values, x.shape, strides, offset_of(node.attrs.begins, strides), out);
    return out;
  }

  Values concat(const Node& node) {
    Values out(static_cast<std::size_t>(element_count(node.type.shape)));
    std::vector<std::int64_t> strides = strides_of(node.type.shape);
    std::int64_t offset = 0;
    for (std::size_t part = 0; part < node.inputs.size(); ++part) {
      const HostTensor& x = in(node, part);
      write_strided(x.values, x.shape, strides,
                    offset * strides[static_cast<std::size_t>(node.attrs.axis)], out);
      offset += x.shape[static_cast<std::size_t>(node.attrs.axis)];
    }
    return out;
  }

  Values broadcast(const Node& node) {
    const HostTensor& x = in(node, 0);
    return read_strided(x.values, node.type.shape,
                        broadcast_strides(x.shape, node.type.shape.size()));
  }

  Values windows(const Node& node) {
    const HostTensor& x = in(node, 0);
    Values out(static_cast<std::size_t>(element_count(node.type.shape)));
    Odometer position(node.type.shape);
    for (std::size_t i = 0; i < out.size(); ++i, position.next())
      out[i] = x.values[static_cast<std::size_t>(
          window_source(position.index(), node.attrs.shape, x.shape))];
    return out;
  }

  Values windows_sum(const Node& node) {
    const HostTensor& g = in(node, 0);
    Values out(static_cast<std::size_t>(element_count(node.type.shape)), 0.0);
    Odometer position(g.shape);
    for (std::size_t i = 0; i < g.values.size(); ++i, position.next())
      out[static_cast<std::size_t>(
          window_source(position.index(), node.attrs.shape, node.type.shape))] += g.values[i];
    return out;
  }

  Values matmul(const Node& node) {
    const HostTensor& a = in(node, 0);
    const HostTensor& b = in(node, 1);
    const Shape& shape = node.type.shape;
    std::int64_t m = shape[shape.size() - 2];
    std::int64_t n = shape.back();
    std::int64_t k = a.shape.back();
    Shape batch(shape.begin(), shape.end() - 2);
    Shape a_batch(a.shape.begin(), a.shape.end() - 2);
    Shape b_batch(b.shape.begin(), b.shape.end() - 2);
    std::vector<std::int64_t> a_strides = broadcast_strides(a_batch, batch.size());
    std::vector<std::int64_t> b_strides = broadcast_strides(b_batch, batch.size());
    Values out(static_cast<std::size_t>(element_count(shape)), 0.0);
    Odometer position(batch);
    for (std::int64_t bi = 0; bi < element_count(batch); ++bi, position.next()) {
      std::int64_t a_base = offset_of(position.index(), a_strides) * m * k;
      std::int64_t b_base = offset_of(position.index(), b_strides) * k * n;
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double total = 0.0;
          for (std::int64_t p = 0; p < k; ++p)
            total += a.values[a_base + i * k + p] * b.values[b_base + p * n + j];
          out[static_cast<std::size_t>(bi * m * n + i * n + j)] = total;
        }
      }
    }
    return out;
  }

  // Calls `row` with the flat positions of every line along `axis`.
  void for_each_line(const Shape& shape, std::int64_t axis,
                     const std::function<void(const std::vector<std::size_t>&)>& row) {
    std::int64_t length = shape[axis];
    std::int64_t inner = strides_of(shape)[axis];
    std::int64_t lines = length == 0 ? 0 : element_count(shape) / length;
    std::vector<std::size_t> positions;
    for (std::int64_t l = 0; l < lines; ++l) {
      std::int64_t base = (l / inner) * length * inner + l % inner;
      positions.clear();
      for (std::int64_t p = 0; p < length; ++p)
        positions.push_back(static_cast<std::size_t>(base + p * inner));
      row(positions);
    }
  }

  Values softmax(const Node& node) {
    const HostTensor& x = in(node, 0);
    Values out(x.values.size());
    for_each_line(x.shape, node.attrs.axis, [&](const std::vector<std::size_t>& line) {
      double top = -std::numeric_limits<double>::infinity();
      for (std::size_t p : line)
        top = std::max(top, x.values[p]);
      double total = 0.0;
      for (std::size_t p : line)
        total += std::exp(x.values[p] - top);
      for (std::size_t p : line) {
        out[p] = node.op == OpKind::softmax ? std::exp(x.values[p] - top) / total
                                            : x.values[p] - top - std::log(total);
      }
    });
    return out;
  }

  Values softmax_grad(const Node& node) {
    const HostTensor& y = in(node, 0);
    const HostTensor& g = in(node, 1);
    Values out(y.values.size());
    for_each_line(y.shape, node.attrs.axis, [&](const std::vector<std::size_t>& line) {
      double dot = 0.0;
      for (std::size_t p : line)
        dot += g.values[p] * y.values[p];
      for (std::size_t p : line)
        out[p] = y.values[p] * (g.values[p] - dot);
    });
    return out;
  }

  // Per row of the logits: the loss at the label, or the gradient g * (softmax - one_hot).
  Values cross_entropy(const Node& node) {
    const HostTensor& logits = in(node, 0);
    const HostTensor& labels = in(node, 1);
    bool gradient = node.op == OpKind::softmax_cross_entropy_grad;
    auto classes = static_cast<std::size_t>(logits.shape.back());
    Values out(gradient ? logits.values.size() : labels.values.size(), 0.0);
    for (std::size_t r = 0; r < labels.values.size(); ++r) {
      auto label = static_cast<std::int64_t>(labels.values[r]);
      if (label < 0 || label >= static_cast<std::int64_t>(classes)) continue;
      const double* row = logits.values.data() + r * classes;
      double top = *std::max_element(row, row + classes);
      double total = 0.0;
      for (std::size_t c = 0; c < classes; ++c)
        total += std::exp(row[c] - top);
      if (!gradient) {
        out[r] = std::log(total) - (row[label] - top);
        continue;
      }
      double g = in(node, 2).values[r];
      for (std::size_t c = 0; c < classes; ++c) {
        double hit = static_cast<std::int64_t>(c) == label ? 1.0 : 0.0;
        out[r * classes + c] = g * (std::exp(row[c] - top) / total - hit);
      }
    }
    return out;
  }

  Values layer_norm(const Node& node) {
    const HostTensor& x = in(node, 0);
    Values out(x.values.size());
    for_each_line(x.shape, x.shape.size() - 1, [&](const std::vector<std::size_t>& line) {
      double mean = 0.0;
      for (std::size_t p : line)
        mean += x.values[p];
      mean /= static_cast<double>(line.size());
      double variance = 0.0;
      for (std::size_t p : line)
        variance += (x.values[p] - mean) * (x.values[p] - mean);
      variance /= static_cast<double>(line.size());
      for (std::size_t p : line)
        out[p] = (x.values[p] - mean) / std::sqrt(variance + node.attrs.eps);
    });
    return out;
  }

  std::int64_t row_index(double value, std::int64_t rows) {
    auto index = static_cast<std::int64_t>(value);
    if (index < 0 || index >= rows) {
      throw std::out_of_range("index " + std::to_string(index) + " is outside a table of " +
                              std::to_string(rows) + " rows");
    }
    return index;
  }

  Values gather(const Node& node) {
    const HostTensor& table = in(node, 0);
    const HostTensor& indices = in(node, 1);
    std::int64_t row = element_count(Shape(table.shape.begin() + 1, table.shape.end()));
    Values out;
    out.reserve(static_cast<std::size_t>(element_count(node.type.shape)));
    for (double value : indices.values) {
      std::int64_t r = row_index(value, table.shape[0]);
      out.insert(out.end(), table.values.begin() + r * row, table.values.begin() + (r + 1) * row);
    }
    return out;
  }

  Values scatter_add(const Node& node) {
    const HostTensor& indices = in(node, 0);
    const HostTensor& updates = in(node, 1);
    std::int64_t row = element_count(Shape(node.type.shape.begin() + 1, node.type.shape.end()));
    Values out(static_cast<std::size_t>(element_count(node.type.shape)), 0.0);
    for (std::size_t i = 0; i < indices.values.size(); ++i) {
      std::int64_t r = row_index(indices.values[i], node.attrs.depth);
      for (std::int64_t c = 0; c < row; ++c) {
        out[static_cast<std::size_t>(r * row + c)] +=
            updates.values[i * static_cast<std::size_t>(row) + static_cast<std::size_t>(c)];
      }
    }
    return out;
  }

  Values one_hot(const Node& node) {
    const HostTensor& indices = in(node, 0);
    std::int64_t depth = node.attrs.depth;
    Values out(static_cast<std::size_t>(element_count(node.type.shape)), 0.0);
    for (std::size_t i = 0; i < indices.values.size(); ++i) {
      auto index = static_cast<std::int64_t>(indices.values[i]);
      if (index >= 0 && index < depth)
        out[i * static_cast<std::size_t>(depth) + static_cast<std::size_t>(index)] = 1.0;
    }
    return out;
  }

  Values dropout(const Node& node) {
    const HostTensor& x = in(node, 0);
    auto step = static_cast<std::int64_t>(in(node, 1).values.at(0));
    double scale = 1.0 / (1.0 - node.attrs.rate);
    Values out(x.values.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      bool keep = dropout_keeps(node.attrs.seed, node.attrs.salt, step,
                                static_cast<std::int64_t>(i), node.attrs.rate);
      out[i] = keep ? x.values[i] * scale : 0.0;
    }
    return out;
  }

  const Graph& graph_;
  const Feeds& feeds_;
  std::vector<HostTensor> values_;  // by node id
};

}  // namespace

HostTensor HostTensor::scalar(double value, DType dtype) {
  return HostTensor{{}, dtype, {value}};
}

HostTensor HostTensor::filled(Shape shape, double value, DType dtype) {
  std::size_t count = static_cast<std::size_t>(element_count(shape));
  return HostTensor{std::move(shape), dtype, std::vector<double>(count, value)};
}

std::vector<HostTensor> evaluate_reference(const Graph& graph, const Feeds& feeds,
                                           std::span<const NodeId> fetch) {
  Evaluator evaluator(graph, feeds);
  evaluator.run(fetch);
  std::vector<HostTensor> results;
  for (NodeId id : fetch)
    results.push_back(evaluator.value(id));
  return results;
}

}  // namespace csrun::graph

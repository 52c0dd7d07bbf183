#include "tensor.hpp"

#include <numeric>

namespace csrun::graph {

namespace {

[[noreturn]] void throw_tracing_error(const Tensor& tensor, const std::string& action,
                                      const SourceLine& where) {
  const Node& node = tensor.node();
  throw TracingError("TracingError: " + action + " the traced tensor made by `" + op_name(node.op) +
                     "` at " + location_string(node.location) + " (" + node.type.to_string() +
                     "), at " + location_string(where) +
                     ": a traced tensor holds no value while the step is traced, so control flow "
                     "cannot depend on it. Select values with where(condition, a, b) instead");
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

std::vector<std::int64_t> normalize_axes(std::vector<std::int64_t> axes, std::int64_t rank) {
  if (axes.empty()) {
    axes.resize(static_cast<std::size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (std::int64_t& axis : axes)
    axis = normalize_axis(axis, rank);
  return axes;
}

Graph& graph_of(const Operand& a, const Operand& b, const Location& where) {
  if (a.tensor) return a.tensor->graph();
  if (b.tensor) return b.tensor->graph();
  throw GraphError("an operation at " + location_string(where) + " has no traced operand");
}

Tensor as_tensor(const Operand& operand, Graph& graph, DType dtype) {
  if (operand.tensor) return *operand.tensor;
  return constant(graph, operand.scalar, {}, dtype, operand.location);
}

// The dtype a C++ number takes next to a tensor operand.
DType partner_dtype(const Operand& a, const Operand& b) {
  if (a.tensor) return a.tensor->dtype();
  if (b.tensor) return b.tensor->dtype();
  return DType::f32;
}

Tensor binary(OpKind op, const Operand& a, const Operand& b) {
  Graph& graph = graph_of(a, b, a.location);
  DType dtype = partner_dtype(a, b);
  Tensor x = as_tensor(a, graph, dtype);
  Tensor y = as_tensor(b, graph, dtype);
  return Tensor(graph, graph.add(op, {x.id(), y.id()}, {}, a.location));
}

Tensor unary(OpKind op, const Operand& x, Attributes attrs = {}) {
  if (!x.tensor)
    throw GraphError(std::string(op_name(op)) + " at " + location_string(x.location) +
                     " needs a traced tensor");
  Graph& graph = x.tensor->graph();
  return Tensor(graph, graph.add(op, {x.tensor->id()}, std::move(attrs), x.location));
}

Tensor reduction(OpKind op, const Tensor& x, std::vector<std::int64_t> axes, bool keepdims,
                 const Location& location) {
  Attributes attrs;
  attrs.axes = normalize_axes(std::move(axes), x.rank());
  attrs.keepdims = keepdims;
  return apply(op, {x}, std::move(attrs), location);
}

}  // namespace

std::int64_t Tensor::dim(std::int64_t axis) const {
  return shape().at(static_cast<std::size_t>(normalize_axis(axis, rank())));
}

Tensor::operator bool() const {
  throw_tracing_error(*this, "converting to bool", node().location);
}

double Tensor::item(std::source_location location) const {
  throw_tracing_error(*this, "reading a number (item()) from", location);
}

std::vector<double> Tensor::to_host(std::source_location location) const {
  throw_tracing_error(*this, "copying to the host", location);
}

Tensor apply(OpKind op, const std::vector<Tensor>& inputs, Attributes attrs, SourceLine location) {
  if (inputs.empty()) throw GraphError(std::string(op_name(op)) + " needs operands");
  std::vector<NodeId> ids;
  for (const Tensor& input : inputs)
    ids.push_back(input.id());
  Graph& graph = inputs.front().graph();
  return Tensor(graph, graph.add(op, std::move(ids), std::move(attrs), location));
}

Tensor constant(Graph& graph, double value, Shape shape, DType dtype, Location location) {
  Attributes attrs;
  attrs.values = {value};
  attrs.shape = std::move(shape);
  attrs.dtype = dtype;
  return Tensor(graph, graph.add(OpKind::constant, {}, std::move(attrs), location));
}

Tensor constant_values(Graph& graph, std::vector<double> values, Shape shape, DType dtype,
                       Location location) {
  Attributes attrs;
  attrs.values = std::move(values);
  attrs.shape = std::move(shape);
  attrs.dtype = dtype;
  return Tensor(graph, graph.add(OpKind::constant, {}, std::move(attrs), location));
}

Tensor iota(Graph& graph, Shape shape, std::int64_t axis, DType dtype, Location location) {
  Attributes attrs;
  attrs.axis = normalize_axis(axis, static_cast<std::int64_t>(shape.size()));
  attrs.shape = std::move(shape);
  attrs.dtype = dtype;
  return Tensor(graph, graph.add(OpKind::iota, {}, std::move(attrs), location));
}

#define UNARY_OP(name)             \
  Tensor name(Operand x) {         \
    return unary(OpKind::name, x); \
  }
#define BINARY_OP(name)                \
  Tensor name(Operand a, Operand b) {  \
    return binary(OpKind::name, a, b); \
  }
#include "ops.def"

Tensor operator+(Operand a, Operand b) {
  return add(a, b);
}
Tensor operator-(Operand a, Operand b) {
  return sub(a, b);
}
Tensor operator*(Operand a, Operand b) {
  return mul(a, b);
}
Tensor operator/(Operand a, Operand b) {
  return div(a, b);
}
Tensor operator-(Operand x) {
  return neg(x);
}
Tensor operator<(Operand a, Operand b) {
  return less(a, b);
}
Tensor operator<=(Operand a, Operand b) {
  return less_equal(a, b);
}
Tensor operator>(Operand a, Operand b) {
  return greater(a, b);
}
Tensor operator>=(Operand a, Operand b) {
  return greater_equal(a, b);
}

Tensor where(Operand condition, Operand a, Operand b) {
  Graph& graph = condition.tensor ? condition.tensor->graph() : graph_of(a, b, condition.location);
  DType dtype = partner_dtype(a, b);
  Tensor c = as_tensor(condition, graph, DType::boolean);
  Tensor x = as_tensor(a, graph, dtype);
  Tensor y = as_tensor(b, graph, dtype);
  return Tensor(graph, graph.add(OpKind::where, {c.id(), x.id(), y.id()}, {}, condition.location));
}

Tensor gelu(Operand x, bool approximate) {
  Attributes attrs;
  attrs.approximate = approximate;
  return unary(OpKind::gelu, x, std::move(attrs));
}

Tensor cast(Operand x, DType dtype) {
  if (x.tensor && x.tensor->dtype() == dtype) return *x.tensor;
  Attributes attrs;
  attrs.dtype = dtype;
  return unary(OpKind::cast, x, std::move(attrs));
}

Tensor sum(const Tensor& x, std::vector<std::int64_t> axes, bool keepdims, Location location) {
  return reduction(OpKind::reduce_sum, x, std::move(axes), keepdims, location);
}

Tensor mean(const Tensor& x, std::vector<std::int64_t> axes, bool keepdims, Location location) {
  return reduction(OpKind::reduce_mean, x, std::move(axes), keepdims, location);
}

Tensor reduce_max(const Tensor& x, std::vector<std::int64_t> axes, bool keepdims,
                  Location location) {
  return reduction(OpKind::reduce_max, x, std::move(axes), keepdims, location);
}

Tensor argmax(const Tensor& x, std::int64_t axis, Location location) {
  Attributes attrs;
  attrs.axis = normalize_axis(axis, x.rank());
  return apply(OpKind::argmax, {x}, std::move(attrs), location);
}

Tensor reshape(const Tensor& x, Shape shape, Location location) {
  if (shape == x.shape()) return x;
  Attributes attrs;
  attrs.shape = std::move(shape);
  return apply(OpKind::reshape, {x}, std::move(attrs), location);
}

Tensor transpose(const Tensor& x, std::vector<std::int64_t> perm, Location location) {
  Attributes attrs;
  for (std::int64_t& axis : perm)
    axis = normalize_axis(axis, x.rank());
  attrs.perm = std::move(perm);
  return apply(OpKind::transpose, {x}, std::move(attrs), location);
}

Tensor swap_last_axes(const Tensor& x, Location location) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(x.rank()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(x, std::move(perm), location);
}

Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t begin, std::int64_t end,
             Location location) {
  std::vector<std::int64_t> begins(static_cast<std::size_t>(x.rank()), 0);
  std::vector<std::int64_t> ends = x.shape();
  std::size_t a = static_cast<std::size_t>(normalize_axis(axis, x.rank()));
  begins.at(a) = begin;
  ends.at(a) = end;
  return slice(x, std::move(begins), std::move(ends), location);
}

Tensor slice(const Tensor& x, std::vector<std::int64_t> begins, std::vector<std::int64_t> ends,
             Location location) {
  Attributes attrs;
  attrs.begins = std::move(begins);
  attrs.ends = std::move(ends);
  return apply(OpKind::slice, {x}, std::move(attrs), location);
}

Tensor pad(const Tensor& x, std::vector<std::int64_t> before, std::vector<std::int64_t> after,
           Location location) {
  Attributes attrs;
  attrs.begins = std::move(before);
  attrs.ends = std::move(after);
  return apply(OpKind::pad, {x}, std::move(attrs), location);
}

Tensor windows(const Tensor& x, Shape window, Location location) {
  Attributes attrs;
  attrs.shape = std::move(window);
  return apply(OpKind::windows, {x}, std::move(attrs), location);
}

Tensor windows_sum(const Tensor& g, Shape window, Location location) {
  Attributes attrs;
  attrs.shape = std::move(window);
  attrs.dtype = g.dtype();
  return apply(OpKind::windows_sum, {g}, std::move(attrs), location);
}

Tensor concat(const std::vector<Tensor>& parts, std::int64_t axis, Location location) {
  if (parts.empty()) throw GraphError("concat at " + location_string(location) + " needs operands");
  Attributes attrs;
  attrs.axis = normalize_axis(axis, parts.front().rank());
  return apply(OpKind::concat, parts, std::move(attrs), location);
}

Tensor broadcast_to(const Tensor& x, Shape shape, Location location) {
  if (shape == x.shape()) return x;
  Attributes attrs;
  attrs.shape = std::move(shape);
  return apply(OpKind::broadcast_to, {x}, std::move(attrs), location);
}

Tensor matmul(const Tensor& a, const Tensor& b, Location location) {
  Attributes attrs;
  attrs.dtype = a.dtype();
  return apply(OpKind::matmul, {a, b}, std::move(attrs), location);
}

Tensor softmax(const Tensor& x, std::int64_t axis, Location location) {
  Attributes attrs;
  attrs.axis = normalize_axis(axis, x.rank());
  return apply(OpKind::softmax, {x}, std::move(attrs), location);
}

Tensor log_softmax(const Tensor& x, std::int64_t axis, Location location) {
  Attributes attrs;
  attrs.axis = normalize_axis(axis, x.rank());
  return apply(OpKind::log_softmax, {x}, std::move(attrs), location);
}

Tensor softmax_grad(const Tensor& y, const Tensor& g, std::int64_t axis, Location location) {
  Attributes attrs;
  attrs.axis = normalize_axis(axis, y.rank());
  return apply(OpKind::softmax_grad, {y, g}, std::move(attrs), location);
}

Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Location location) {
  Attributes attrs;
  attrs.dtype = logits.dtype();
  return apply(OpKind::softmax_cross_entropy, {logits, labels}, std::move(attrs), location);
}

Tensor softmax_cross_entropy_grad(const Tensor& logits, const Tensor& labels, const Tensor& g,
                                  Location location) {
  Attributes attrs;
  attrs.dtype = logits.dtype();
  return apply(OpKind::softmax_cross_entropy_grad, {logits, labels, g}, std::move(attrs), location);
}

Tensor layer_norm(const Tensor& x, double eps, Location location) {
  Attributes attrs;
  attrs.eps = eps;
  return apply(OpKind::layer_norm, {x}, std::move(attrs), location);
}

Tensor gather(const Tensor& table, const Tensor& indices, Location location) {
  return apply(OpKind::gather, {table, indices}, {}, location);
}

Tensor scatter_add(const Tensor& indices, const Tensor& updates, std::int64_t rows,
                   Location location) {
  Attributes attrs;
  attrs.depth = rows;
  return apply(OpKind::scatter_add, {indices, updates}, std::move(attrs), location);
}

Tensor one_hot(const Tensor& indices, std::int64_t depth, DType dtype, Location location) {
  Attributes attrs;
  attrs.depth = depth;
  attrs.dtype = dtype;
  return apply(OpKind::one_hot, {indices}, std::move(attrs), location);
}

Tensor dropout(const Tensor& x, const Tensor& step, double rate, std::uint64_t seed,
               std::uint64_t salt, Location location) {
  Attributes attrs;
  attrs.rate = rate;
  attrs.seed = seed;
  attrs.salt = salt;
  return apply(OpKind::dropout, {x, step}, std::move(attrs), location);
}

}  // namespace csrun::graph

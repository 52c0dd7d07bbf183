#pragma once

#include <optional>
#include <source_location>
#include <stdexcept>
#include <vector>

#include "graph.hpp"

namespace csrun::graph {

// A traced tensor was asked for a value while tracing (`if (x > 0)`, item()). The message names
// the op that made the tensor and the model line, and suggests where().
class TracingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A handle to a node being traced. Model code computes with Tensors as with values; every
// operation records a node instead of computing.
class Tensor {
 public:
  Tensor() = default;
  Tensor(Graph& graph, NodeId id) : graph_(&graph), id_(id) {}

  NodeId id() const { return id_; }
  Graph& graph() const { return *graph_; }
  const Node& node() const { return graph_->node(id_); }
  const TensorType& type() const { return node().type; }
  const Shape& shape() const { return type().shape; }
  DType dtype() const { return type().dtype; }
  std::int64_t rank() const { return type().rank(); }
  // The size of `axis` (negative counts from the end).
  std::int64_t dim(std::int64_t axis) const;

  // A traced tensor has no value until the step runs: these throw TracingError.
  explicit operator bool() const;
  double item(std::source_location location = std::source_location::current()) const;
  std::vector<double> to_host(
      std::source_location location = std::source_location::current()) const;

 private:
  Graph* graph_ = nullptr;
  NodeId id_ = -1;
};

// An operand of a traced operator: a tensor, or a C++ number that becomes a constant of the
// other operand's dtype. It records the model line that used it (the default argument is
// evaluated where the conversion happens, in the model code).
struct Operand {
  Operand(const Tensor& value, std::source_location where = std::source_location::current())
      : tensor(value), location(where) {}
  Operand(double value, std::source_location where = std::source_location::current())
      : scalar(value), location(where) {}

  std::optional<Tensor> tensor;
  double scalar = 0.0;
  std::source_location location;
};

using Location = std::source_location;

// Leaves.
Tensor constant(Graph& graph, double value, Shape shape = {}, DType dtype = DType::f32,
                Location location = Location::current());
Tensor constant_values(Graph& graph, std::vector<double> values, Shape shape,
                       DType dtype = DType::f32, Location location = Location::current());
Tensor iota(Graph& graph, Shape shape, std::int64_t axis, DType dtype = DType::i32,
            Location location = Location::current());

// Elementwise, with broadcasting: a builder for each UNARY_OP, BINARY_OP and COMPARISON_OP of
// ops.def (add, sub, mul, div, pow, maximum, minimum, less, ..., logical_not, neg, abs, exp, log,
// ...), the operators for the common ones, and the ops that read attributes or a condition.
#define UNARY_OP(name) Tensor name(Operand x);
#define BINARY_OP(name) Tensor name(Operand a, Operand b);
#include "ops.def"
Tensor operator+(Operand a, Operand b);
Tensor operator-(Operand a, Operand b);
Tensor operator*(Operand a, Operand b);
Tensor operator/(Operand a, Operand b);
Tensor operator-(Operand x);
Tensor operator<(Operand a, Operand b);
Tensor operator<=(Operand a, Operand b);
Tensor operator>(Operand a, Operand b);
Tensor operator>=(Operand a, Operand b);
// Elementwise selection: where condition is true a, else b. The traced way to branch on data.
Tensor where(Operand condition, Operand a, Operand b);
Tensor gelu(Operand x, bool approximate = false);
Tensor cast(Operand x, DType dtype);

// Reductions; negative axes count from the end; no axes means all of them.
Tensor sum(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false,
           Location location = Location::current());
Tensor mean(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false,
            Location location = Location::current());
Tensor reduce_max(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false,
                  Location location = Location::current());
Tensor argmax(const Tensor& x, std::int64_t axis = -1, Location location = Location::current());

// Layout.
Tensor reshape(const Tensor& x, Shape shape, Location location = Location::current());
Tensor transpose(const Tensor& x, std::vector<std::int64_t> perm,
                 Location location = Location::current());
Tensor swap_last_axes(const Tensor& x, Location location = Location::current());
Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t begin, std::int64_t end,
             Location location = Location::current());
// Elements [begins[a], ends[a]) of every axis a.
Tensor slice(const Tensor& x, std::vector<std::int64_t> begins, std::vector<std::int64_t> ends,
             Location location = Location::current());
Tensor pad(const Tensor& x, std::vector<std::int64_t> before, std::vector<std::int64_t> after,
           Location location = Location::current());
Tensor concat(const std::vector<Tensor>& parts, std::int64_t axis,
              Location location = Location::current());
Tensor broadcast_to(const Tensor& x, Shape shape, Location location = Location::current());
// The windows of extents `window` over x's trailing axes (a convolution's im2col, ops.def), and
// their gradient: g's windows summed back where they were taken, in g's type.
Tensor windows(const Tensor& x, Shape window, Location location = Location::current());
Tensor windows_sum(const Tensor& g, Shape window, Location location = Location::current());

// Linear algebra and neural-network primitives.
Tensor matmul(const Tensor& a, const Tensor& b, Location location = Location::current());
Tensor softmax(const Tensor& x, std::int64_t axis = -1, Location location = Location::current());
Tensor log_softmax(const Tensor& x, std::int64_t axis = -1,
                   Location location = Location::current());
// softmax's gradient at its result y for the incoming gradient g.
Tensor softmax_grad(const Tensor& y, const Tensor& g, std::int64_t axis = -1,
                    Location location = Location::current());
// Per-row cross-entropy of logits [..., C] against i32 labels [...], and its gradient.
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                             Location location = Location::current());
Tensor softmax_cross_entropy_grad(const Tensor& logits, const Tensor& labels, const Tensor& g,
                                  Location location = Location::current());
Tensor layer_norm(const Tensor& x, double eps, Location location = Location::current());
Tensor gather(const Tensor& table, const Tensor& indices, Location location = Location::current());
Tensor scatter_add(const Tensor& indices, const Tensor& updates, std::int64_t rows,
                   Location location = Location::current());
Tensor one_hot(const Tensor& indices, std::int64_t depth, DType dtype = DType::f32,
               Location location = Location::current());
Tensor dropout(const Tensor& x, const Tensor& step, double rate, std::uint64_t seed,
               std::uint64_t salt, Location location = Location::current());

// Adds a node of any op to the tensors' graph (for code that works on ops generically).
Tensor apply(OpKind op, const std::vector<Tensor>& inputs, Attributes attrs = {},
             SourceLine location = std::source_location::current());

}  // namespace csrun::graph

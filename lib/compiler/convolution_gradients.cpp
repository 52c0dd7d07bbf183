#include <numeric>
#include <optional>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::DType;
using graph::NodeId;
using graph::OpKind;
using graph::Shape;

// A convolution's input gradient as autodiff builds it, f32 throughout: the windows' gradient,
// a product of the weight's matrix transposed [C * K, O] and the output's gradient [N, O, P],
// reshaped to the windows' shape [N, C, K, O1, ..., Od] and summed back onto the padded input
// (windows_sum). The product and its reshape are read by the sum alone.
struct InputGradient {
  NodeId sum = -1;
  NodeId reshape = -1;
  NodeId product = -1;
  NodeId transpose = -1;  // of the weight's matrix [O, C * K]
};

class ConvolutionGradients {
 public:
  explicit ConvolutionGradients(const graph::Graph& source)
      : source_(source), users_(source), rewriter_(source) {}

  std::size_t run() {
    std::vector<InputGradient> found = find();
    if (found.empty()) return 0;
    std::vector<InputGradient> at(source_.size());
    std::vector<bool> dropped(source_.size(), false);
    for (const InputGradient& gradient : found) {
      for (NodeId id : {gradient.reshape, gradient.product})
        dropped[static_cast<std::size_t>(id)] = true;
      if (users_.sole_user(gradient.transpose) == gradient.product)
        dropped[static_cast<std::size_t>(gradient.transpose)] = true;
      at[static_cast<std::size_t>(gradient.sum)] = gradient;
    }
    for (std::size_t i = 0; i < source_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (rewriter_.copy_leaf(id) || dropped[i]) continue;
      if (at[i].sum == id) {
        rewriter_.map(id, convolved(at[i]));
        continue;
      }
      rewriter_.copy(id);
    }
    return found.size();
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  const graph::TensorType& type(NodeId id) const { return source_.node(id).type; }

  std::vector<InputGradient> find() const {
    std::vector<InputGradient> found;
    for (std::size_t i = 0; i < source_.size(); ++i) {
      if (auto gradient = input_gradient(static_cast<NodeId>(i))) found.push_back(*gradient);
    }
    return found;
  }

  std::optional<InputGradient> input_gradient(NodeId sum) const {
    const graph::Node& node = source_.node(sum);
    if (node.op != OpKind::windows_sum || node.type.dtype != DType::f32) return std::nullopt;
    NodeId reshape = node.inputs[0];
    const graph::Node& view = source_.node(reshape);
    if (view.op != OpKind::reshape || users_.sole_user(reshape) != sum) return std::nullopt;
    NodeId product = view.inputs[0];
    const graph::Node& matmul = source_.node(product);
    if (matmul.op != OpKind::matmul || users_.sole_user(product) != reshape) return std::nullopt;
    NodeId transpose = matmul.inputs[0];
    const graph::Node& weights = source_.node(transpose);
    if (weights.op != OpKind::transpose || type(transpose).rank() != 2 ||
        !graph::swaps_last_two_axes(weights.attrs.perm))
      return std::nullopt;
    const Shape& windows = view.type.shape;                // [N, C, K, O1, ..., Od]
    const Shape& result = matmul.type.shape;               // [N, C * K, P]
    const Shape& gradient = type(matmul.inputs[1]).shape;  // [N, O, P]
    auto axes = node.attrs.shape.size();
    bool shaped = windows.size() == axes + 3 && result.size() == 3 && gradient.size() == 3 &&
                  result[0] == windows[0] && gradient[0] == windows[0] &&
                  result[1] == windows[1] * windows[2] && gradient[1] == type(transpose).shape[1];
    bool f32 = matmul.type.dtype == DType::f32 && type(transpose).dtype == DType::f32 &&
               type(matmul.inputs[1]).dtype == DType::f32;
    if (!shaped || !f32) return std::nullopt;
    return InputGradient{sum, reshape, product, transpose};
  }

  NodeId add(OpKind op, std::vector<NodeId> inputs, graph::Attributes attrs, NodeId origin) {
    return rewriter_.add(op, std::move(inputs), std::move(attrs), origin);
  }

  NodeId reshaped(NodeId value, Shape shape, NodeId origin) {
    graph::Attributes attrs;
    attrs.shape = std::move(shape);
    return add(OpKind::reshape, {value}, std::move(attrs), origin);
  }

  NodeId transposed(NodeId value, std::vector<std::int64_t> perm, NodeId origin) {
    graph::Attributes attrs;
    attrs.perm = std::move(perm);
    return add(OpKind::transpose, {value}, std::move(attrs), origin);
  }

  // The weight's matrix [O, C * K] as [C, O * K] with each kernel reversed: element
  // [c, o * K + w] is weight [o, c, K - 1 - w], a window offset mirrored along every axis.
  NodeId mirrored_weights(const InputGradient& gradient) {
    NodeId origin = gradient.sum;
    const Shape& windows = type(gradient.reshape).shape;
    std::int64_t channels = windows[1];
    std::int64_t count = windows[2];
    NodeId matrix = rewriter_.mapped(source_.node(gradient.transpose).inputs[0]);
    std::int64_t outputs = rewriter_.target().node(matrix).type.shape[0];
    NodeId by_offset =
        transposed(reshaped(matrix, {outputs, channels, count}, origin), {2, 1, 0}, origin);
    graph::Attributes reversed;
    reversed.shape = {count};
    reversed.dtype = DType::i32;
    reversed.values.resize(static_cast<std::size_t>(count));
    std::iota(reversed.values.rbegin(), reversed.values.rend(), 0.0);
    NodeId order = add(OpKind::constant, {}, std::move(reversed), origin);
    NodeId mirrored = add(OpKind::gather, {by_offset, order}, {}, origin);
    return reshaped(transposed(mirrored, {1, 2, 0}, origin), {channels, outputs * count}, origin);
  }

  // The sum of the windows' gradient onto the padded input is the output's gradient padded by
  // the kernel's extent less one on each side, convolved with the mirrored weights: the same
  // terms, each element's summed in one product.
  NodeId convolved(const InputGradient& gradient) {
    NodeId origin = gradient.sum;
    const graph::Node& sum = source_.node(gradient.sum);
    const Shape& extents = sum.attrs.shape;
    const Shape& windows = type(gradient.reshape).shape;
    const Shape& padded = sum.type.shape;  // [N, C, S1, ..., Sd]
    NodeId weights = mirrored_weights(gradient);
    NodeId output_gradient = rewriter_.mapped(source_.node(gradient.product).inputs[1]);
    std::int64_t batch = windows[0];
    std::int64_t outputs = type(gradient.transpose).shape[1];
    Shape spatial = {batch, outputs};
    spatial.insert(spatial.end(), windows.begin() + 3, windows.end());
    graph::Attributes padding;
    padding.begins.assign(2, 0);
    for (std::int64_t extent : extents)
      padding.begins.push_back(extent - 1);
    padding.ends = padding.begins;
    NodeId around =
        add(OpKind::pad, {reshaped(output_gradient, spatial, origin)}, std::move(padding), origin);
    graph::Attributes window;
    window.shape = extents;
    NodeId taken = add(OpKind::windows, {around}, std::move(window), origin);
    std::int64_t positions = graph::element_count(Shape(padded.begin() + 2, padded.end()));
    NodeId matrices =
        reshaped(taken, {batch, outputs * graph::element_count(extents), positions}, origin);
    graph::Attributes f32;
    f32.dtype = DType::f32;
    NodeId product = add(OpKind::matmul, {weights, matrices}, std::move(f32), origin);
    return reshaped(product, padded, origin);
  }

  const graph::Graph& source_;
  NodeUsers users_;
  GraphRewriter rewriter_;
};

}  // namespace

std::size_t convolve_gradients(Program& program) {
  expect_unfused(program, "convolve_gradients");
  return rewrite_where_present<ConvolutionGradients>(program.graph, OpKind::windows_sum);
}

}  // namespace csrun::compiler

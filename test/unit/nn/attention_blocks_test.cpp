// Attention computed a block of queries at a time (nn::attention over long sequences) against
// whole attention, on the reference evaluator: the same values and gradients.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "graph/autodiff.hpp"
#include "graph/reference_evaluator.hpp"
#include "nn/layers.hpp"
#include "nn/scope.hpp"

using namespace csrun;
using graph::DType;
using graph::Tensor;

namespace {

constexpr std::int64_t kBatch = 2;
constexpr std::int64_t kLength = 11;
constexpr std::int64_t kWidth = 8;

graph::HostTensor varied(const graph::Shape& shape, double phase) {
  graph::HostTensor t{shape, DType::f32, {}};
  for (std::int64_t i = 0; i < graph::element_count(shape); ++i)
    t.values.push_back(std::sin(0.7 * static_cast<double>(i) + phase));
  return t;
}

struct Evaluated {
  std::vector<graph::HostTensor> values;  // the output, then the gradients of x and of the weights
  std::int64_t softmaxes = 0;
  std::int64_t scores = 0;  // the softmaxes' elements
};

// Self-attention of x [2, 11, 8] with `options` (and a score bias fed as an input), queries
// `block` at a time (0: as their size decides), its output and the gradients of sum(output^2).
Evaluated evaluate(nn::AttentionOptions options, bool score_bias, std::int64_t block) {
  graph::Graph graph;
  nn::StepContext context(graph, false, 1);
  context.set_attention_query_block(block);
  Tensor x(graph, graph.add_input("x", {{kBatch, kLength, kWidth}, DType::f32}));
  Tensor keep(graph, graph.add_input("keep", {{kBatch, kLength}, DType::i32}));
  graph::Shape bias_shape{1, options.heads, kLength, kLength};
  if (score_bias)
    options.score_bias = Tensor(graph, graph.add_input("bias", {bias_shape, DType::f32}));
  Tensor y = nn::self_attention(nn::Scope(context, "attention"), x, keep, options);
  std::vector<Tensor> wrt{x};
  for (const Tensor& parameter : context.parameters())
    wrt.push_back(parameter);
  std::vector<Tensor> gradients = graph::gradients(sum(y * y), wrt);
  graph::Feeds feeds{{"x", varied({kBatch, kLength, kWidth}, 0.0)}};
  graph::HostTensor keep_values{
      {kBatch, kLength}, DType::i32, std::vector<double>(kBatch * kLength, 1.0)};
  keep_values.values.at(kLength - 1) = 0.0;  // the first sample's last position is padding
  feeds["keep"] = keep_values;
  if (score_bias) feeds["bias"] = varied(bias_shape, 0.3);
  for (std::size_t p = 0; p < context.parameters().size(); ++p) {
    const Tensor& parameter = context.parameters()[p];
    feeds[graph.leaf_name(parameter.id())] = varied(parameter.shape(), static_cast<double>(p));
  }
  std::vector<graph::NodeId> fetch{y.id()};
  for (const Tensor& gradient : gradients)
    fetch.push_back(gradient.id());
  Evaluated evaluated{graph::evaluate_reference(graph, feeds, fetch), 0};
  for (graph::NodeId id = 0; id < static_cast<graph::NodeId>(graph.size()); ++id) {
    const graph::Node& node = graph.node(id);
    if (node.op != graph::OpKind::softmax) continue;
    evaluated.softmaxes += 1;
    evaluated.scores += graph::element_count(node.type.shape);
  }
  return evaluated;
}

double largest_difference(const Evaluated& a, const Evaluated& b) {
  REQUIRE(a.values.size() == b.values.size());
  double worst = 0.0;
  for (std::size_t v = 0; v < a.values.size(); ++v) {
    REQUIRE(a.values[v].shape == b.values[v].shape);
    for (std::size_t e = 0; e < a.values[v].values.size(); ++e)
      worst = std::max(worst, std::fabs(a.values[v].values[e] - b.values[v].values[e]) /
                                  std::max(1.0, std::fabs(b.values[v].values[e])));
  }
  return worst;
}

// Whether query `query` may see key `key` under the masks of `options`.
bool sees(std::int64_t query, std::int64_t key, const nn::AttentionOptions& options) {
  if (!options.causal && !options.window) return true;
  if (key > query) return false;
  if (!options.window) return true;
  return query - key < *options.window || key < options.sink_tokens;
}

// The scores of blocks of `block` queries when each block multiplies the keys from the first any
// of its queries may see to the last: [2, heads, queries, keys] elements a block.
std::int64_t blocked_scores(const nn::AttentionOptions& options, std::int64_t block) {
  std::int64_t scores = 0;
  for (std::int64_t first = 0; first < kLength; first += block) {
    std::int64_t count = std::min(block, kLength - first);
    std::int64_t lowest = kLength;
    std::int64_t highest = -1;
    for (std::int64_t query = first; query < first + count; ++query) {
      for (std::int64_t key = 0; key < kLength; ++key) {
        if (!sees(query, key, options)) continue;
        lowest = std::min(lowest, key);
        highest = std::max(highest, key);
      }
    }
    scores += kBatch * options.heads * count * (highest - lowest + 1);
  }
  return scores;
}

}  // namespace

TEST_CASE("attention a block of queries at a time gives the values and gradients of whole") {
  nn::AttentionOptions grouped;
  grouped.heads = 4;
  grouped.kv_heads = 2;
  grouped.causal = true;
  grouped.score_scale = 0.5;
  nn::AttentionOptions windowed = grouped;
  windowed.window = 3;
  nn::AttentionOptions with_sink = windowed;
  with_sink.sink_tokens = 1;
  nn::AttentionOptions plain;  // with T5's relative position bias, and no causal mask
  plain.heads = 2;
  struct Variant {
    const char* name;
    nn::AttentionOptions options;
    bool score_bias;
  };
  for (const Variant& variant :
       {Variant{"grouped, causal", grouped, false}, Variant{"sliding window", windowed, false},
        Variant{"sliding window with a sink", with_sink, false},
        Variant{"a score bias", plain, true}}) {
    INFO(variant.name);
    Evaluated whole = evaluate(variant.options, variant.score_bias, 0);
    for (std::int64_t block : {1, 4, 5, 10}) {
      INFO("blocks of " << block << " queries");
      Evaluated blocked = evaluate(variant.options, variant.score_bias, block);
      CHECK(blocked.softmaxes == (kLength + block - 1) / block * whole.softmaxes);
      CHECK(blocked.scores == blocked_scores(variant.options, block));
      CHECK(largest_difference(blocked, whole) <= 1e-12);
    }
  }
}

TEST_CASE("attention's queries are blocked only where their scores are large") {
  // GPT-2 small at MSL 2048 (12 heads, 201 MB of f32 scores a sample): whole.
  CHECK(nn::query_block_rows(12, 2048, 2048) == 2048);
  // Llama 3.2 1B at MSL 2048 (32 heads, 537 MB): two blocks of 1,024 queries.
  CHECK(nn::query_block_rows(32, 2048, 2048) == 1024);
  // ... and at MSL 8k (8.6 GB): blocks of 512, the least a block takes.
  CHECK(nn::query_block_rows(32, 8192, 8192) == nn::kMinQueryBlock);
  // At most kMaxQueryBlocks blocks, however long the sequence.
  CHECK(nn::query_block_rows(2, 262144, 262144) == 262144 / nn::kMaxQueryBlocks);
  // Every block's f32 scores within the bound, unless a block is the least.
  for (std::int64_t length : {3000, 4096, 5000}) {
    std::int64_t rows = nn::query_block_rows(16, length, length);
    CHECK(rows < length);
    CHECK(16 * rows * length * 4 <= nn::kMaxScoreBlockBytes);
  }
}

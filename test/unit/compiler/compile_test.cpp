#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "compiler/compile.hpp"
#include "graph/reference_evaluator.hpp"
#include "models/registry.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;
using namespace csrun::graph;

namespace {

// A small configuration of every model csrun builds.
const std::map<std::string, std::string>& tiny_models() {
  static const std::map<std::string, std::string> models = {
      {"fc_mnist", "{name: fc_mnist, hidden_sizes: [16, 8], dropout: 0.0}"},
      {"gpt2",
       "{name: gpt2, vocab_size: 40, hidden_size: 16, num_heads: 2, num_hidden_layers: 2, "
       "filter_size: 32, max_position_embeddings: 8}"},
      {"gpt3",
       "{name: gpt3, vocab_size: 40, hidden_size: 16, num_heads: 4, num_hidden_layers: 1, "
       "filter_size: 32, max_position_embeddings: 8, share_embedding_weights: false}"},
      {"bert",
       "{name: bert, vocab_size: 40, hidden_size: 16, num_heads: 2, num_hidden_layers: 2, "
       "filter_size: 32, max_position_embeddings: 8}"},
      {"roberta",
       "{name: roberta, vocab_size: 40, hidden_size: 16, num_heads: 2, num_hidden_layers: 1, "
       "filter_size: 32, max_position_embeddings: 8}"},
      {"gptj",
       "{name: gptj, vocab_size: 40, hidden_size: 16, num_heads: 2, num_hidden_layers: 2, "
       "filter_size: 32, max_position_embeddings: 8, rotary_dim: 4, use_bias_in_output: true}"},
      {"llama",
       "{name: llama, vocab_size: 40, hidden_size: 16, num_heads: 4, num_hidden_layers: 2, "
       "filter_size: 24, max_position_embeddings: 8, position_embedding_type: rotary, "
       "rotary_dim: 4, norm_type: rmsnorm, nonlinearity: swiglu, share_embedding_weights: false, "
       "attention_module: multiquery_attention, extra_attention_params: {num_kv_groups: 2}, "
       "pos_scaling_type: llama3, pos_scaling_factor: 8.0, pos_scaling_extra_args: "
       "{original_max_position_embeddings: 8}, attention_sliding_window_length: 4, "
       "attention_sink_tokens: 1}"},
      {"bert/classifier",
       "{name: bert/classifier, vocab_size: 40, hidden_size: 16, num_heads: 2, "
       "num_hidden_layers: 1, filter_size: 32, max_position_embeddings: 8, num_labels: 3, "
       "compute_eval_metrics: true}"},
      {"bert/token_classifier",
       "{name: bert/token_classifier, vocab_size: 40, hidden_size: 16, num_heads: 2, "
       "num_hidden_layers: 1, filter_size: 32, max_position_embeddings: 8, num_classes: 7, "
       "compute_eval_metrics: true}"},
      {"bert/extractive_summarization",
       "{name: bert/extractive_summarization, vocab_size: 40, hidden_size: 16, num_heads: 2, "
       "num_hidden_layers: 1, filter_size: 32, max_position_embeddings: 8}"},
      {"linformer",
       "{name: linformer, vocab_size: 40, hidden_size: 16, num_heads: 2, num_hidden_layers: 1, "
       "filter_size: 32, max_position_embeddings: 8, projected_dims: 4, "
       "attention_style: linformer-shared-heads}"},
      {"t5",
       "{name: t5, src_vocab_size: 40, d_model: 16, d_kv: 4, num_heads: 2, d_ff: 24, "
       "encoder_num_hidden_layers: 1, decoder_num_hidden_layers: 1, "
       "relative_attention_num_buckets: 8, encoder_nonlinearity: gated-gelu, "
       "src_max_position_embeddings: 8, tgt_max_position_embeddings: 6}"},
      {"transformer",
       "{name: transformer, src_vocab_size: 40, tgt_vocab_size: 40, d_model: 16, d_kv: 8, "
       "num_heads: 2, d_ff: 32, encoder_num_hidden_layers: 1, decoder_num_hidden_layers: 1, "
       "src_max_position_embeddings: 8, tgt_max_position_embeddings: 6, label_smoothing: 0.1, "
       "share_embedding_weights: false, share_encoder_decoder_embedding: false}"},
      {"unet",
       "{name: unet, encoder_filters: [4, 8], decoder_filters: [4], image_shape: [8, 8, 1], "
       "norm_layer: group, norm_kwargs: {num_groups: 2}, enable_bias: true}"},
  };
  return models;
}

std::map<std::string, HostTensor> results(const Graph& graph, const Feeds& feeds) {
  std::vector<NodeId> fetch;
  std::vector<std::string> names;
  for (const NamedNode& output : graph.outputs()) {
    fetch.push_back(output.node);
    names.push_back("output " + output.name);
  }
  for (const NamedNode& update : graph.updates()) {
    fetch.push_back(update.node);
    names.push_back("update " + update.name);
  }
  std::vector<HostTensor> values = evaluate_reference(graph, feeds, fetch);
  std::map<std::string, HostTensor> named;
  for (std::size_t i = 0; i < names.size(); ++i)
    named.emplace(names[i], std::move(values[i]));
  return named;
}

}  // namespace

TEST_CASE("every model csrun builds compiles, and its f32 plan computes what the trace does") {
  std::set<std::string> buildable;
  for (const models::ModelDefinition& definition : models::model_registry()) {
    if (definition.build) buildable.insert(definition.name);
  }
  std::set<std::string> covered;
  for (const auto& [name, yaml] : tiny_models())
    covered.insert(name);
  CHECK(buildable == covered);
  for (const auto& [name, yaml] : tiny_models()) {
    for (bool training : {true, false}) {
      INFO(name << (training ? " training" : " eval") << " step");
      models::TracedStep step = test::traced_step(yaml, 2, training);
      Feeds feeds = test::sample_feeds(step.graph);
      std::map<std::string, HostTensor> before = results(step.graph, feeds);
      compiler::CompiledStep compiled = compiler::compile_step(step.graph, {});
      CHECK(compiled.program.graph.size() <= step.graph.size());
      CHECK_FALSE(compiled.kernels.empty());
      std::map<std::string, HostTensor> after = results(compiled.program.graph, feeds);
      REQUIRE(after.size() == before.size());
      for (const auto& [result, value] : before) {
        INFO(result);
        const HostTensor& other = after.at(result);
        REQUIRE(other.values.size() == value.values.size());
        for (std::size_t i = 0; i < value.values.size(); ++i)
          CHECK(other.values[i] == Approx(value.values[i]).epsilon(1e-9).margin(1e-12));
      }
    }
  }
}

TEST_CASE("mixed precision keeps a step close to f32") {
  models::TracedStep step = test::traced_step(tiny_models().at("gpt2"), 2, false);
  Feeds feeds = test::sample_feeds(step.graph);
  double exact = results(step.graph, feeds).at("output loss").values[0];
  for (DType half : {DType::bf16, DType::f16, DType::cb16}) {
    INFO(dtype_name(half));
    compiler::CompiledStep compiled = compiler::compile_step(step.graph, {{true, half, 1}, {}});
    double lowered = results(compiled.program.graph, feeds).at("output loss").values[0];
    CHECK(lowered == Approx(exact).epsilon(2e-2));
    CHECK(lowered != exact);
  }
}

TEST_CASE("the pass manager shows the program after every pass, in order, with statistics") {
  models::TracedStep step = test::traced_step(tiny_models().at("fc_mnist"), 4);
  std::vector<std::string> seen;
  compiler::CompileOptions options{{true, DType::bf16, 1},
                                   [&](std::string_view pass, const compiler::Program& program) {
                                     seen.emplace_back(pass);
                                     CHECK_FALSE(program.to_text().empty());
                                   }};
  compiler::CompiledStep compiled = compiler::compile_step(std::move(step.graph), options);
  // The last dump points, lower-host and layout-scratch, are the plan's host steps and scratch
  // (build_plan), not passes.
  seen.emplace_back("lower-host");
  seen.emplace_back("layout-scratch");
  CHECK(seen == compiler::dump_points());
  REQUIRE(compiled.passes.size() + 3 == seen.size());
  for (std::size_t i = 0; i < compiled.passes.size(); ++i)
    CHECK(compiled.passes[i].name == seen[i + 1]);
  CHECK(compiled.passes.back().fusions_after == compiled.program.fusions.size());
  std::string text = compiled.program.to_text();
  CHECK(text.find(" matmul}") != std::string::npos);
  CHECK(text.find("update \"model.fc_layers.0.weight\"") != std::string::npos);
}

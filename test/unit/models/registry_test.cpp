#include <catch2/catch.hpp>

#include "models/registry.hpp"
#include "support/params_fixture.hpp"

using namespace csrun;
using csrun::test::load_params_text;

namespace {

struct Checked {
  std::optional<models::CheckedModel> model;
  config::Diagnostics diagnostics;
  std::string dump() const {
    std::string text;
    for (const config::Diagnostic& d : diagnostics.all())
      text += d.to_string() + "\n";
    return text;
  }
  bool error(const std::string& text) const {
    for (const config::Diagnostic& d : diagnostics.all()) {
      if (d.severity == config::Severity::error && d.to_string().find(text) != std::string::npos)
        return true;
    }
    return false;
  }
};

Checked check(const std::string& model_yaml, const std::string& loader_yaml = "{batch_size: 4}") {
  auto loaded = load_params_text(
      "trainer:\n  init:\n    device: CSX\n    model: " + model_yaml +
      "\n    loop: {max_steps: 1}\n  fit:\n    train_dataloader: " + loader_yaml + "\n");
  Checked checked;
  checked.diagnostics = loaded.diagnostics;
  checked.model = models::check_model(loaded.trainer(), checked.diagnostics);
  return checked;
}

std::int64_t parameters(const std::string& model_yaml) {
  Checked checked = check(model_yaml);
  INFO(checked.dump());
  REQUIRE(checked.model);
  REQUIRE_FALSE(checked.diagnostics.has_errors());
  return checked.model->parameter_count;
}

}  // namespace

TEST_CASE("the registry knows every network of the Model Zoo workflow") {
  CHECK(models::model_names() ==
        std::vector<std::string>{"fc_mnist", "gpt2", "gpt3", "gptj", "llama", "bert",
                                 "bert/classifier", "bert/token_classifier",
                                 "bert/extractive_summarization", "roberta", "linformer", "t5",
                                 "transformer", "unet"});
  for (const models::ModelDefinition& model : models::model_registry()) {
    CHECK_FALSE(model.data_processors.empty());
    CHECK(model.schema);
  }
}

TEST_CASE("parameter counts match the published sizes") {
  CHECK(parameters("{name: fc_mnist, depth: 10, hidden_size: 50}") == 62'710);
  CHECK(parameters("{name: fc_mnist, hidden_sizes: [512, 512]}") ==
        784 * 512 + 512 + 512 * 512 + 512 + 5130);
  // GPT-2 small (Hugging Face gpt2): 124,439,808.
  CHECK(parameters("{name: gpt2, vocab_size: 50257}") == 124'439'808);
  // Cerebras-GPT 111M: GPT-2 small with 10 layers and 2048 positions.
  CHECK(parameters("{name: gpt3, vocab_size: 50257, num_hidden_layers: 10, "
                   "max_position_embeddings: 2048}") == 111'050'496);
  // BERT-base with the pre-training heads (Hugging Face BertForPreTraining): 110,106,428.
  CHECK(parameters("{name: bert}") == 110'106'428);
  // Llama 3.2 1B: 1,235,814,400 (the Llama keys spelled out: the Model Zoo's llama has GPT-2's
  // defaults).
  CHECK(parameters(
            "{name: llama, vocab_size: 128256, hidden_size: 2048, num_hidden_layers: 16, "
            "num_heads: 32, filter_size: 8192, attention_module: multiquery_attention, "
            "extra_attention_params: {num_kv_groups: 8}, share_embedding_weights: true, "
            "max_position_embeddings: 8192, position_embedding_type: rotary, norm_type: rmsnorm, "
            "nonlinearity: swiglu, use_projection_bias_in_attention: false, "
            "use_ffn_bias_in_attention: false, use_ffn_bias: false}") == 1'235'814'400);
  // GPT-J 6B with the 50257-token vocabulary (Hugging Face pads to 50400).
  CHECK(parameters("{name: gptj, vocab_size: 50257, hidden_size: 4096, num_hidden_layers: 28, "
                   "num_heads: 16, "
                   "filter_size: 16384, rotary_dim: 64, use_bias_in_output: true}") ==
        6'049'711'185);
}

TEST_CASE("consistency rules between a model's params") {
  CHECK(check("{name: gpt2, vocab_size: 100, hidden_size: 100, num_heads: 12}")
            .error(
                "trainer.init.model.num_heads: hidden_size 100 must be divisible by num_heads 12"));
  CHECK(check("{name: gpt2, vocab_size: 100, max_position_embeddings: 128}",
              "{data_processor: GptHDF5DataProcessor, batch_size: 4, data_dir: d, "
              "max_sequence_length: 256}")
            .error("the data's max_sequence_length 256 exceeds max_position_embeddings 128"));
  CHECK(check("{name: llama, vocab_size: 100, attention_module: multiquery_attention, "
              "extra_attention_params: "
              "{num_kv_groups: 5}}")
            .error("extra_attention_params.num_kv_groups must be a positive integer that divides "
                   "num_heads (12); found 5"));
  CHECK(check("{name: gptj, vocab_size: 100, rotary_dim: 100}")
            .error("rotary_dim 100 must be even, at least 2 and at most the head size "
                   "hidden_size / num_heads = 64"));
  CHECK(check("{name: llama, vocab_size: 100, position_embedding_type: rotary, "
              "pos_scaling_type: yarn, pos_scaling_factor: 4.0}")
            .error("yarn scaling needs pos_scaling_extra_args.original_max_position_embeddings"));
  CHECK(check("{name: fc_mnist, depth: 2}").error("fc_mnist needs its hidden layers"));
  CHECK(check("{name: unet, encoder_filters: [8, 16, 32], decoder_filters: [8]}")
            .error("UNet needs one decoder block per encoder block but the bottleneck"));
  CHECK(check("{name: gpt2}").error("Field required: 'vocab_size'"));
}

TEST_CASE("unknown models and keys get suggestions") {
  CHECK(check("{name: gtp2}")
            .error("unknown model 'gtp2'; did you mean 'gpt2'? Known models: 'fc_mnist'"));
  CHECK(check("{name: gpt2, vocab_size: 10, hiden_size: 64}")
            .error("trainer.init.model.hiden_size: Extra inputs are not permitted; did you mean "
                   "'hidden_size'?"));
}

TEST_CASE("legacy params leave the model implicit: it is inferred from data and keys") {
  auto loaded = load_params_text(
      R"(train_input: {data_processor: GptHDF5MapDataProcessor, batch_size: 4, data_dir: d}
model: {vocab_size: 100, hidden_size: 64, num_heads: 4, num_hidden_layers: 2}
optimizer: {optimizer_type: SGD, learning_rate: 0.1}
runconfig: {max_steps: 2}
)");
  config::Diagnostics diagnostics;
  auto model = models::check_model(loaded.trainer(), diagnostics);
  REQUIRE(model);
  CHECK(model->definition->name == "gpt2");
  CHECK(model->name_inferred);
  bool warned = false;
  for (const config::Diagnostic& d : diagnostics.all()) {
    warned = warned ||
             d.message.find("csrun inferred 'gpt2' from data_processor GptHDF5MapDataProcessor") !=
                 std::string::npos;
  }
  CHECK(warned);

  auto parallel = load_params_text(
      R"(train_input: {data_processor: GptHDF5DataProcessor, batch_size: 4, data_dir: d}
model: {vocab_size: 100, residual_dropout_rate: 0.1}
runconfig: {max_steps: 2}
)");
  config::Diagnostics more;
  CHECK(models::check_model(parallel.trainer(), more)->definition->name == "gptj");

  auto nothing =
      load_params_text(R"(train_input: {data_processor: MNISTDataProcessor, batch_size: 4}
model: {vocab_size: 100}
runconfig: {max_steps: 2}
)");
  config::Diagnostics none;
  CHECK_FALSE(models::check_model(nothing.trainer(), none));
  CHECK(none.has_errors());

  // A name that is there but no string is its own error: nothing is inferred in its place.
  auto null_name =
      load_params_text(R"(train_input: {data_processor: MNISTDataProcessor, batch_size: 4}
model: {name: null, hidden_sizes: [8]}
runconfig: {max_steps: 2}
)");
  CHECK(null_name.error("model.name: expected a string; found null"));
  config::Diagnostics unnamed;
  CHECK_FALSE(models::check_model(null_name.trainer(), unnamed));
  CHECK(unnamed.all().empty());
}

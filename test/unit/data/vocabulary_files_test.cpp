#include <catch2/catch.hpp>

#include "data/vocabulary_files.hpp"
#include "support/params_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

// A TensorFlow-layout T5 file (its runconfig has a TF Estimator key) reading `vocab_file`.
test::LoadedParams tensorflow_t5(const std::string& vocab_file, const std::string& model_extra) {
  return test::load_params_text(
      "train_input: {data_processor: T5DynamicDataProcessor, vocab_file: '" + vocab_file +
      "', data_dir: d, batch_size: 8}\nmodel: {d_model: 64" + model_extra +
      "}\noptimizer: {optimizer_type: adamw, learning_rate: 0.001}\n"
      "runconfig: {max_steps: 10, save_checkpoints_steps: 5}\n");
}

bool said(const config::Diagnostics& diagnostics, config::Severity severity,
          const std::string& text) {
  for (const config::Diagnostic& d : diagnostics.all()) {
    if (d.severity == severity && d.to_string().find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a TensorFlow-layout T5 counts its vocabulary file, in the model and its tree") {
  test::TempDir dir;
  std::string vocab = dir.write("vocab.txt", "<pad>\n</s>\n<unk>\nthe\n\nof\n");
  test::LoadedParams loaded = tensorflow_t5(vocab, "");
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  config::TrainerSpec trainer = loaded.trainer();
  config::Diagnostics diagnostics;
  data::read_vocabulary_sizes(trainer, diagnostics);
  CHECK(trainer.model.params.find("src_vocab_size")->as_int() == 5);  // the blank line is no token
  CHECK(trainer.tree.find("init")->find("model")->find("src_vocab_size")->as_int() == 5);
  CHECK(said(diagnostics, config::Severity::note,
             "the TensorFlow layout's vocabulary size is the number of tokens in src_vocab_file: "
             "csrun sets src_vocab_size: 5"));
}

TEST_CASE("an unreadable vocabulary file gives the Model Zoo's own size, with a warning") {
  test::LoadedParams loaded = tensorflow_t5("/nonexistent/vocab.txt", "");
  config::TrainerSpec trainer = loaded.trainer();
  config::Diagnostics diagnostics;
  data::read_vocabulary_sizes(trainer, diagnostics);
  CHECK(trainer.model.params.find("src_vocab_size")->as_int() == 32001);
  CHECK(said(diagnostics, config::Severity::warning,
             "but /nonexistent/vocab.txt does not exist; csrun sets src_vocab_size: 32001"));
}

TEST_CASE("a vocabulary size the model gives, or a file of the PyTorch layout, is left alone") {
  test::TempDir dir;
  std::string vocab = dir.write("vocab.txt", "a\nb\n");
  config::TrainerSpec given = tensorflow_t5(vocab, ", src_vocab_size: 77").trainer();
  config::Diagnostics diagnostics;
  data::read_vocabulary_sizes(given, diagnostics);
  CHECK(given.model.params.find("src_vocab_size")->as_int() == 77);
  config::TrainerSpec pytorch = test::load_params_text(
                                    "train_input: {data_processor: T5DynamicDataProcessor, "
                                    "src_vocab_file: '" +
                                    vocab +
                                    "', src_data_dir: d, batch_size: 8}\nmodel: {name: t5}\n"
                                    "optimizer: {optimizer_type: adamw, learning_rate: 0.001}\n"
                                    "runconfig: {max_steps: 10}\n")
                                    .trainer();
  data::read_vocabulary_sizes(pytorch, diagnostics);
  CHECK_FALSE(pytorch.model.params.contains("src_vocab_size"));
  CHECK(diagnostics.all().empty());
}

#include <catch2/catch.hpp>

#include "config/release_evidence.hpp"
#include "support/params_fixture.hpp"

using namespace csrun::config;

namespace {

std::size_t release_warnings(const csrun::test::LoadedParams& loaded) {
  std::size_t count = 0;
  for (const Diagnostic& d : loaded.diagnostics.all())
    count += d.message.find("is a key of Model Zoo") != std::string::npos ? 1 : 0;
  return count;
}

const std::string kTrainerModel =
    "trainer:\n  init:\n    device: CPU\n    model: {name: gpt2, vocab_size: 100, %s}\n"
    "    loop: {max_steps: 5}\n  fit:\n    train_dataloader: {data_processor: "
    "GptHDF5DataProcessor, batch_size: 4, data_dir: d}\n";

std::string trainer_model(const std::string& keys) {
  std::string text = kTrainerModel;
  return text.replace(text.find("%s"), 2, keys);
}

}  // namespace

TEST_CASE("release ranges read as the Model Zoo's release names") {
  CHECK(ReleaseRange{Release::r2_4, Release::r2_10}.describe() == "2.4 and later");
  CHECK(ReleaseRange{Release::r1_6, Release::r2_0}.describe() == "2.0 and earlier");
  CHECK(ReleaseRange{Release::r1_9, Release::r2_2}.describe() == "1.9 to 2.2");
  CHECK(ReleaseRange{Release::r1_9, Release::r1_9}.describe() == "1.9");
  CHECK(release_name(Release::r2_10) == "2.10");
}

TEST_CASE("a key of a release the rest of the file points away from is a warning") {
  auto old_key = csrun::test::load_params_text(trainer_model("use_position_embedding: true"));
  INFO(old_key.dump());
  CHECK(
      old_key.warning("trainer.init.model.use_position_embedding: use_position_embedding is a "
                      "key of Model Zoo 2.0 and earlier, but the rest of this file points to "
                      "2.4 and later (its trainer layout); check which release the file is for"));

  // A 2.0 legacy file (use_cs_grad_accum, autogen_policy, wrk_memory_gi) with a muP key of 2.4.
  auto legacy = csrun::test::load_params_text(
      R"(train_input: {data_processor: GptHDF5DataProcessor, batch_size: 8, data_dir: d}
model: {name: gpt2, vocab_size: 100, mup_base_hidden_size: 256}
optimizer: {optimizer_type: sgd, learning_rate: 0.1}
runconfig: {max_steps: 5, use_cs_grad_accum: true, autogen_policy: medium, wrk_memory_gi: 4}
)");
  INFO(legacy.dump());
  CHECK(
      legacy.warning("model.mup_base_hidden_size: mup_base_hidden_size is a key of "
                     "Model Zoo 2.4 and later, but the rest of this file points to "
                     "2.0 (use_cs_grad_accum, autogen_policy, wrk_memory_gi)"));
  CHECK(release_warnings(legacy) == 1);
}

TEST_CASE("keys that agree with the file's release, or with a tie, give no warning") {
  auto modern = csrun::test::load_params_text(
      trainer_model("rope_theta: 500000.0, attention_sink_tokens: 4"));
  CHECK(release_warnings(modern) == 0);
  // Every release reads the legacy layout: a legacy file's one key of 2.4 is all it says.
  auto tie = csrun::test::load_params_text(
      R"(train_input: {data_processor: GptHDF5DataProcessor, batch_size: 8, data_dir: d}
model: {name: gpt2, vocab_size: 100, fold_rope_consts: false}
optimizer: {optimizer_type: sgd, learning_rate: 0.1}
runconfig: {max_steps: 5}
)");
  CHECK(release_warnings(tie) == 0);
}

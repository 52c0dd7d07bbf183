// Every real Model Zoo params file in ../shared/modelzoo-configs gets the verdict a Model Zoo user
// expects from `csrun validate FILE --fake_data`.

#include <catch2/catch.hpp>

#include "support/process.hpp"

namespace {

struct Verdict {
  const char* file;
  int exit_code;
  std::vector<std::string> expected;  // lines (or parts of lines) that must be printed
};

const std::vector<Verdict>& verdicts() {
  static const std::vector<Verdict> all = {
      {"fc_mnist_r1.6.0__params.yaml",
       0,
       {"fc_mnist_r1.6.0__params.yaml:32:5: warning: runconfig.save_losses: save_losses is a Model "
        "Zoo 1.x runconfig key",
        "model       fc_mnist, 62,710 parameters",
        "traced      training step of 128 samples per system"}},
      {"fc_mnist__params.yaml",
       0,
       {"legacy params (converted to the trainer format)", "batch 4",
        "traced      training step of 4"}},
      {"fc_mnist__params_cszoov2.yaml",
       0,
       {"trainer params", "model       fc_mnist, 62,710 parameters"}},
      {"gpt2_r1.8.0__params_gpt2_small_ws.yaml",
       1,
       {"gpt2_r1.8.0__params_gpt2_small_ws.yaml:94:9: error: optimizer.learning_rate.1.steps: "
        "Found duplicate YAML "
        "key: 'steps' (first defined at line 93, column 9)",
        "csrun validate: 1 error in"}},
      {"gpt2_r2.3.1__params_gpt2_small.yaml",
       0,
       {"csrun inferred 'gpt2' from data_processor GptHDF5MapDataProcessor",
        "cbfloat16 mixed precision, dynamic loss scaling",
        "traced      training step of 112 samples per system"}},
      {"gpt3_r2.0.2__params_gpt3_6p7b.yaml",
       1,
       {"gpt3_r2.0.2__params_gpt3_6p7b.yaml:119:5: error: runconfig.use_cs_grad_accum: "
        "use_cs_grad_accum is no "
        "longer a valid option. To control gradient accumulation settings on CSX, set "
        "micro_batch_size: (\"auto\" | "
        "None) in the train_input and/or eval_input section of the params yaml file.",
        "csrun validate: 1 error in"}},
      {"gpt3__111m.yaml",
       0,
       {"model       gpt3, 111,050,496 parameters",
        "traced      training step of 120 samples per system"}},
      {"gptj__params_gptj_6B.yaml",
       0,
       {"model       gptj, 6,049,711,185 parameters",
        "warning: trainer.init.model: csrun cannot build the gptj network yet"}},
      {"bert_r1.6.0__bert_base_msl128.yaml",
       0,
       {"warning: runconfig.multireplica: multireplica is a Model Zoo 1.x runconfig key",
        "model       bert (inferred), 110,106,428 parameters"}},
      {"bert__bert_base_MSL128.yaml",
       0,
       {"model       bert, 110,106,428 parameters",
        "traced      training step of 3,200 samples per system"}},
      {"t5_r1.6.0__t5_small.yaml",
       0,
       {"model       t5 (inferred)", "csrun cannot build the t5 network yet"}},
      {"transformer__transformer_base.yaml",
       0,
       {"model       transformer", "csrun cannot build the transformer network yet"}},
      {"linformer_r1.6.0__params_linformer_roberta_base_msl512_proj256_shared_kv.yaml",
       0,
       {"warning: runconfig.save_checkpoints_steps: save_checkpoints_steps is a TensorFlow-era key",
        "PyYAML (the Model Zoo's YAML loader) reads 1e-5 as a string",
        "model       linformer (inferred)"}},
      {"unet_r1.9.1__params_severstal_binary.yaml",
       0,
       {"model       unet (inferred)", "eval data   SeverstalBinaryClassDataProcessor, batch 64"}},
      {"llama__params_llama3p2_1b_msl_8k.yaml",
       0,
       {"model       llama, 1,235,814,400 parameters", "micro-batch 8"}},
  };
  return all;
}

}  // namespace

TEST_CASE("every shipped Model Zoo config gets the expected verdict") {
  for (const Verdict& verdict : verdicts()) {
    auto result =
        csrun::test::run_csrun({"validate", verdict.file, "--fake_data"}, CSRUN_MODELZOO_CONFIGS);
    std::string output = result.out + result.err;
    INFO(verdict.file << "\n" << output);
    CHECK(result.exit_code == verdict.exit_code);
    if (verdict.exit_code == 0)
      CHECK(output.find("Config validation was successful!") != std::string::npos);
    for (const std::string& line : verdict.expected)
      CHECK(output.find(line) != std::string::npos);
  }
}

TEST_CASE("without --fake_data a config names the dataset it cannot find") {
  auto result =
      csrun::test::run_csrun({"validate", "fc_mnist__params.yaml"}, CSRUN_MODELZOO_CONFIGS);
  CHECK(result.exit_code == 1);
  CHECK(result.err.find(
            "fc_mnist__params.yaml:3:15: error: train_input.data_dir: the directory './mnist' does "
            "not exist") != std::string::npos);
}

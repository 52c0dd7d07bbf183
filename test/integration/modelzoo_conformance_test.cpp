// Every real Model Zoo params file in ../shared/modelzoo-configs gets the verdict a Model Zoo user
// expects from `csrun validate FILE --fake_data`.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

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
       0,
       {"gpt3_r2.0.2__params_gpt3_6p7b.yaml:119:5: warning: runconfig.use_cs_grad_accum: "
        "use_cs_grad_accum is a Model Zoo 2.0 runconfig key that 2.2 and later refuse; csrun "
        "applies their migration: micro_batch_size: auto in train_input and eval_input",
        "model       gpt2 (inferred)"}},
      {"gpt3__111m.yaml",
       0,
       {"model       gpt3, 111,050,496 parameters",
        "traced      training step of 120 samples per system"}},
      {"gptj__params_gptj_6B.yaml",
       0,
       {"model       gptj, 6,049,711,185 parameters",
        "traced      training step of 120 samples per system"}},
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
       {"model       t5 (inferred), 52,130,688 parameters",
        "traced      training step of 216 samples per system"}},
      {"transformer__transformer_base.yaml",
       0,
       {"model       transformer, 62,817,280 parameters",
        "traced      training step of 2,048 samples per system"}},
      {"linformer_r1.6.0__params_linformer_roberta_base_msl512_proj256_shared_kv.yaml",
       0,
       {"warning: runconfig.save_checkpoints_steps: save_checkpoints_steps is the TensorFlow-era "
        "spelling of runconfig.checkpoint_steps; csrun reads it as checkpoint_steps",
        "PyYAML (the Model Zoo's YAML loader) reads 1e-5 as a string",
        "model       linformer (inferred), 111,088,698 parameters",
        "traced      training step of 1,024 samples per system"}},
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

namespace {

struct IndexEntry {
  std::string file;      // <release>/<family>__<file>
  std::string expected;  // accept or reject
};

std::vector<IndexEntry> release_index() {
  std::ifstream index(CSRUN_MODELZOO_CONFIGS "/releases/INDEX.tsv");
  REQUIRE(index);
  std::vector<IndexEntry> entries;
  std::string line;
  std::getline(index, line);  // the header
  while (std::getline(index, line)) {
    std::istringstream fields(line);
    IndexEntry entry;
    std::getline(fields, entry.file, '\t');
    std::getline(fields, entry.expected, '\t');
    entries.push_back(entry);
  }
  return entries;
}

// How validate describes TensorFlow's loss scaling rule.
constexpr const char* kTensorflowScaling = " (TensorFlow's: halved when over";

// Validate's description of a run without its first line (which names the file and its
// layout), its "compiled" lines (a plan found in the compile cache or compiled now; the traced
// line's graph fingerprint says whether the network is the same) and the markers of what csrun
// inferred or defaulted, which a converted file states; with `tensorflow_scaling`, also
// TensorFlow's loss scaling rule and the traced line.
std::string run_description(const std::string& validate_output, bool tensorflow_scaling) {
  std::string text = validate_output.substr(validate_output.find('\n') + 1);
  for (std::size_t at = text.find("  compiled "); at != std::string::npos;
       at = text.find("  compiled ", at))
    text.erase(at, text.find('\n', at) + 1 - at);
  for (const std::string marker : {" (inferred)", " (default)"}) {
    for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker))
      text.erase(at, marker.size());
  }
  // TensorFlow's loss scaling rule, which the trainer format cannot express (convert says so),
  // and with it the traced step, whose loss scale update differs.
  if (!tensorflow_scaling) return text;
  if (std::size_t at = text.find(kTensorflowScaling); at != std::string::npos)
    text.erase(at, text.find(')', at) + 1 - at);
  if (std::size_t at = text.find("  traced "); at != std::string::npos)
    text.erase(at, text.find('\n', at) + 1 - at);
  return text;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// What happened to one shipped file: its compilation (when csrun traces its network), its verdict
// and, for an accepted one, its conversion to the 2.10 trainer format.
struct ReleaseFileCheck {
  csrun::test::ProcessResult compiled;
  csrun::test::ProcessResult validated;
  bool traced = false;
  csrun::test::ProcessResult converted;
  csrun::test::ProcessResult reconverted;
  csrun::test::ProcessResult converted_validated;
  bool conversion_stable = false;
};

// Each file runs in its own directory, where the model_dir it names (relative in every shipped
// file) lies. It is compiled first, so validate finds the plan of the step it traces in the
// compile cache instead of compiling it again. (The converted file's plan is another one: the
// cache key holds the release a file comes from, which decides the wafer's execution mode.)
ReleaseFileCheck check_release_file(const IndexEntry& entry, const std::filesystem::path& scratch) {
  using csrun::test::run_csrun;
  const std::string file = CSRUN_MODELZOO_CONFIGS "/releases/" + entry.file;
  const std::string directory = scratch.string();
  ReleaseFileCheck check;
  if (entry.expected == "accept")
    check.compiled = run_csrun({"compile", file, "--fake_data"}, directory);
  check.validated = run_csrun({"validate", file, "--fake_data"}, directory);
  if (entry.expected != "accept" || check.validated.exit_code != 0) return check;
  check.traced = check.validated.out.find("\n  traced ") != std::string::npos;
  std::string first = (scratch / "converted.yaml").string();
  std::string second = (scratch / "reconverted.yaml").string();
  check.converted = run_csrun({"config", "convert", file, "-o", first}, directory);
  if (check.converted.exit_code != 0) return check;
  check.reconverted = run_csrun({"config", "convert", first, "-o", second}, directory);
  check.conversion_stable = read_text(first) == read_text(second);
  check.converted_validated = run_csrun({"validate", first, "--fake_data"}, directory);
  return check;
}

}  // namespace

// Seven releases' files, checked in parallel: each gets its verdict; an accepted one whose
// network csrun traces compiles; an accepted one converts to the 2.10 trainer format, converting
// the result again changes nothing, and validate describes the converted run as the original.
TEST_CASE(
    "every params file of seven Model Zoo releases gets its release's verdict, compiles "
    "when csrun builds its network and converts to the 2.10 trainer format") {
  std::vector<IndexEntry> entries = release_index();
  REQUIRE(entries.size() == 427);
  csrun::test::TempDir scratch;
  std::vector<ReleaseFileCheck> checks(entries.size());
  std::atomic<std::size_t> next = 0;
  auto work = [&] {
    for (std::size_t i = next++; i < entries.size(); i = next++) {
      std::filesystem::path own = scratch.path() / std::to_string(i);
      std::filesystem::create_directories(own);
      checks[i] = check_release_file(entries[i], own);
    }
  };
  std::vector<std::jthread> workers;
  for (unsigned n = 0; n < std::max(2u, std::thread::hardware_concurrency()); ++n)
    workers.emplace_back(work);
  workers.clear();
  std::size_t compiled = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const IndexEntry& entry = entries[i];
    const ReleaseFileCheck& check = checks[i];
    INFO(entry.file << " (" << entry.expected << ")\n" << check.validated.err);
    CHECK(check.validated.exit_code != 124);
    CHECK(check.validated.exit_code == (entry.expected == "accept" ? 0 : 1));
    if (entry.expected == "reject") {
      CHECK(check.validated.err.find("Found duplicate YAML key") != std::string::npos);
      continue;
    }
    // The release table of csrun agrees with every file the Model Zoo shipped.
    CHECK(check.validated.err.find("is a key of Model Zoo") == std::string::npos);
    if (check.traced) {
      INFO("compile:\n" << check.compiled.err);
      CHECK(check.compiled.exit_code == 0);
      CHECK(check.validated.out.find("  compiled    plan in the compile cache") !=
            std::string::npos);
      compiled += check.compiled.exit_code == 0;
    }
    INFO("convert:\n" << check.converted.err << "\nconvert again:\n" << check.reconverted.err);
    CHECK(check.converted.exit_code == 0);
    CHECK(check.reconverted.exit_code == 0);
    CHECK(check.conversion_stable);
    bool tensorflow_scaling = check.validated.out.find(kTensorflowScaling) != std::string::npos;
    if (tensorflow_scaling) {
      CHECK(check.converted.err.find("the 2.10 format has no key for that, so the converted file "
                                     "halves it at every overflow") != std::string::npos);
    }
    INFO("validate the converted file:\n" << check.converted_validated.err);
    CHECK(check.converted_validated.exit_code == 0);
    CHECK(run_description(check.converted_validated.out, tensorflow_scaling) ==
          run_description(check.validated.out, tensorflow_scaling));
  }
  // Every accepted file (every network is built): a drop here means files that traced before no
  // longer do.
  INFO("compiled " << compiled);
  CHECK(compiled >= 425);
}

TEST_CASE("a key the builder does not implement: validate warns, compile refuses with it") {
  // Every network the shipped files use is built; a user's own key is the case left.
  std::string file = "Release_2.10.0/gpt3__Cerebras_GPT_111m_mup.yaml";
  std::string alibi = "trainer.init.model.position_embedding_type=alibi";
  std::string directory = CSRUN_MODELZOO_CONFIGS "/releases";
  auto validated =
      csrun::test::run_csrun({"validate", file, "--fake_data", "--set", alibi}, directory);
  INFO(validated.err);
  CHECK(validated.exit_code == 0);
  CHECK(validated.err.find("warning: trainer.init.model.position_embedding_type: "
                           "position_embedding_type 'alibi' is not supported yet by csrun's gpt3 "
                           "builder (supported: learned, rotary, null): the step is not traced") !=
        std::string::npos);
  csrun::test::TempDir dir;
  auto compiled = csrun::test::run_csrun(
      {"compile", file, "--fake_data", "--set", alibi, "-o", (dir.path() / "model").string()},
      directory);
  INFO(compiled.err);
  CHECK(compiled.exit_code == 1);
  CHECK(compiled.err.find("position_embedding_type 'alibi' is not supported yet by csrun's gpt3 "
                          "builder (supported: learned, rotary, null), so there is no step to "
                          "compile") != std::string::npos);
}

namespace {

// A number the run logged after `label`, or NaN where it logged none.
double logged_number(const std::string& output, const std::string& label) {
  std::size_t at = output.rfind(label);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(output.c_str() + at + label.size(), nullptr);
}

struct RealRun {
  const char* file;                // under releases/
  std::vector<std::string> batch;  // --set arguments giving batches of 2 in the file's layout
  bool evaluates;                  // the file has an eval input: csrun eval reads the checkpoint
};

// `csrun COMMAND STEPS_FLAG 1` on a release file, with its --set arguments and one model_dir.
csrun::test::ProcessResult one_step(const RealRun& run, const csrun::test::TempDir& dir,
                                    const std::string& command, const std::string& steps_flag) {
  std::vector<std::string> arguments = {command,
                                        CSRUN_MODELZOO_CONFIGS "/releases/" + std::string(run.file),
                                        steps_flag,
                                        "1",
                                        "--fake_data",
                                        "--num_workers_per_csx",
                                        "0",
                                        "-o",
                                        (dir.path() / "model").string()};
  arguments.insert(arguments.end(), run.batch.begin(), run.batch.end());
  return csrun::test::run_csrun(arguments);
}

}  // namespace

// Compiling every file (above) does not run a kernel. These files of five families, in the
// layouts they shipped in (TensorFlow, legacy), train a step at their real sizes (T5 small,
// Transformer base, BERT base with cbfloat16 and dynamic loss scaling, the DAGM UNet), and
// csrun eval reads the checkpoint the step wrote. scripts/train_release_files.py trains them all.
TEST_CASE(
    "real params files of five families train a step at batch 2 and evaluate its checkpoint") {
  // Legacy files' training and eval batches.
  const std::vector<std::string> legacy = {"--set", "train_input.batch_size=2", "--set",
                                           "eval_input.batch_size=2"};
  const std::vector<RealRun> runs = {
      {"R_1.6.0/fc_mnist_tf__params.yaml", {"--set", "train_input.batch_size=2"}, false},
      {"R_1.6.0/unet_tf__params_dagm.yaml",
       {"--set", "train_input.train_batch_size=2", "--set", "train_input.eval_batch_size=2"},
       true},
      {"Release_2.0.2/t5__t5_small.yaml", legacy, true},
      {"R_1.6.0/transformer_tf__params_base.yaml", legacy, true},
      {"Release_2.2.0/bert_classifier__bert_base_classifier_sst2.yaml", legacy, true},
  };
  for (const RealRun& run : runs) {
    csrun::test::TempDir dir;
    auto trained = one_step(run, dir, "train", "--max_steps");
    INFO(run.file << "\n" << trained.err);
    REQUIRE(trained.exit_code == 0);
    CHECK(trained.out.find("Training completed successfully!") != std::string::npos);
    CHECK(std::isfinite(logged_number(trained.out, "Step=1, Loss=")));
    if (!run.evaluates) continue;
    auto evaluated = one_step(run, dir, "eval", "--eval_steps");
    INFO(evaluated.err);
    REQUIRE(evaluated.exit_code == 0);
    CHECK(evaluated.out.find("GlobalStep=1,") != std::string::npos);  // the step's checkpoint
    CHECK(std::isfinite(logged_number(evaluated.out, "Avg Eval Loss: ")));
  }
}

// Model Zoo 1.6's TensorFlow GPT models report eval/bits_per_byte: the loss per token in bits
// times the tokens per byte of the dataset their data_dir names (OpenWebText2 here, 0.2434).
TEST_CASE("a TensorFlow-era GPT-2 file reports the bits per byte of its dataset") {
  std::vector<std::string> small;
  for (const char* setting :
       {"model.hidden_size=32", "model.num_heads=2", "model.filter_size=64",
        "model.num_hidden_layers=1", "model.max_position_embeddings=16",
        "train_input.max_sequence_length=16", "eval_input.max_sequence_length=16",
        "train_input.batch_size=2", "eval_input.batch_size=2"}) {
    small.insert(small.end(), {"--set", setting});
  }
  RealRun run{"R_1.6.0/gpt2_tf__params_gpt2_small.yaml", small, true};
  csrun::test::TempDir dir;
  auto trained = one_step(run, dir, "train", "--max_steps");
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  auto evaluated = one_step(run, dir, "eval", "--eval_steps");
  INFO(evaluated.out << evaluated.err);
  REQUIRE(evaluated.exit_code == 0);
  double perplexity = logged_number(evaluated.out, "eval/lm_perplexity = ");
  double bits = logged_number(evaluated.out, "eval/bits_per_byte = ");
  REQUIRE(std::isfinite(perplexity));
  CHECK(bits == Approx(std::log2(perplexity) * 0.2434).epsilon(1e-5));
}

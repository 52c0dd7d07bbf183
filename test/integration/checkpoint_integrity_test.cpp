// What a run does with checkpoints it cannot trust or cannot write: a clear error naming the
// file, exit 1, and every earlier checkpoint intact.

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runner/checkpoint.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using csrun::test::run_csrun;
namespace fs = std::filesystem;
namespace runner = csrun::runner;

namespace {

const std::string kRun = R"(trainer:
  init:
    device: CSX
    seed: 5
    model: {name: fc_mnist, hidden_sizes: [16]}
    optimizer: {SGD: {lr: 0.01, momentum: 0.9}}
    loop: {max_steps: 6}
    checkpoint: {steps: 3}
  fit:
    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 8}
    val_dataloader: {data_processor: MNISTDataProcessor, batch_size: 8}
)";

const std::string kWeight = "model.fc_layers.0.weight";

// A model_dir holding checkpoint_3.mdl and checkpoint_6.mdl of a finished run.
struct TrainedRun {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  runner::Checkpoint trained;

  TrainedRun() {
    auto train = run_csrun({"train", params, "--fake_data", "-o", model_dir.string()});
    INFO(train.out << train.err);
    REQUIRE(train.exit_code == 0);
    trained = runner::load_checkpoint(checkpoint(6));
  }
  std::string checkpoint(int step) const {
    return (model_dir / ("checkpoint_" + std::to_string(step) + ".mdl")).string();
  }
  csrun::test::ProcessResult resume(int max_steps) const {
    return run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--max_steps",
                      std::to_string(max_steps)});
  }
  // Rewrites checkpoint 6 as written by training, with `edit` applied (checksums then match).
  template <class Edit>
  void tamper(Edit edit) const {
    runner::Checkpoint edited = trained;
    edit(edited);
    runner::save_checkpoint(checkpoint(6), edited);
  }
};

bool leftovers(const fs::path& directory) {
  for (const fs::directory_entry& entry : fs::directory_iterator(directory))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a checkpoint that cannot be written stops a resumed run cleanly, earlier ones intact") {
  TrainedRun run;
  // A file-size limit fails the write as a full disk does (the probe's crash was in HDF5's
  // shutdown after such a failure).
  std::string command = "ulimit -f 64; exec '" + std::string(CSRUN_BINARY) + "' train '" +
                        run.params + "' --fake_data -o '" + run.model_dir.string() +
                        "' --max_steps 12";
  auto limited = csrun::test::run_process({"/bin/bash", "-c", command});
  INFO(limited.out << limited.err);
  CHECK(limited.exit_code == 1);
  CHECK(limited.err.find("cannot write " + run.checkpoint(9) + ": File too large") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(run.checkpoint(9)));
  CHECK_FALSE(leftovers(run.model_dir));
  CHECK(runner::load_checkpoint(run.checkpoint(6)).global_step() == 6);
  auto resumed = run.resume(9);
  CHECK(resumed.exit_code == 0);
  CHECK(fs::exists(run.checkpoint(9)));
}

TEST_CASE("a checkpoint tensor of another shape or kind of number is refused with both shapes") {
  TrainedRun run;
  run.tamper([](runner::Checkpoint& checkpoint) {
    auto& dims = checkpoint.tensors.at(kWeight).dims;
    std::swap(dims[0], dims[1]);
  });
  auto transposed = run.resume(9);
  CHECK(transposed.exit_code == 1);
  CHECK(transposed.err.find(run.checkpoint(6) + ": '" + kWeight +
                            "' has shape (784, 16); the model's is (16, 784)") !=
        std::string::npos);

  run.tamper([](runner::Checkpoint& checkpoint) {
    auto& values = checkpoint.tensors.at(kWeight).values;
    const auto& floats = std::get<runner::CheckpointTensor::Floats>(values);
    values = runner::CheckpointTensor::Integers(floats.begin(), floats.end());
  });
  auto integers = run.resume(9);
  CHECK(integers.exit_code == 1);
  CHECK(integers.err.find("'" + kWeight + "' is stored as integers; the model's is f32") !=
        std::string::npos);
}

TEST_CASE("a checkpoint step out of range is refused, one at max_steps has nothing to train") {
  TrainedRun run;
  run.tamper([](runner::Checkpoint& checkpoint) {
    checkpoint.tensors.at("global_step").values = runner::CheckpointTensor::Integers{-5};
  });
  auto negative = run.resume(40);
  CHECK(negative.exit_code == 1);
  CHECK(negative.err.find(run.checkpoint(6) + ": 'global_step' is -5") != std::string::npos);
  CHECK_FALSE(fs::exists(run.checkpoint(0)));

  run.tamper([](runner::Checkpoint& checkpoint) {
    checkpoint.tensors.at("global_step").values = runner::CheckpointTensor::Integers{2147483647};
  });
  CHECK(run.resume(40).err.find("'global_step' is 2147483647") != std::string::npos);

  run.tamper([](runner::Checkpoint&) {});
  auto done = run.resume(6);
  CHECK(done.exit_code == 0);
  CHECK(done.out.find("The run is at step 6, max_steps is 6: there is nothing left to train.") !=
        std::string::npos);
}

TEST_CASE("a checkpoint's data position past this dataset's epoch resumes at the next epoch") {
  TrainedRun run;
  run.tamper([](runner::Checkpoint& checkpoint) {
    checkpoint.tensors.at("dataloader.samples_in_epoch").values =
        runner::CheckpointTensor::Integers{1000000000};
  });
  auto resumed = run.resume(7);
  INFO(resumed.out << resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.out.find("WARNING:     The checkpoint's training data position, sample "
                         "1000000000 of epoch 0, is past the end of this dataset's epoch of ") !=
        std::string::npos);
  CHECK(resumed.out.find("the run continues at the start of epoch 1") != std::string::npos);
}

TEST_CASE("flipped bits in a checkpoint's weights stop eval with the file named") {
  TrainedRun run;
  std::ifstream in(run.checkpoint(6), std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  in.close();
  runner::Checkpoint original = runner::load_checkpoint(run.checkpoint(6));
  const auto& stored =
      std::get<runner::CheckpointTensor::Floats>(original.tensors.at(kWeight).values);
  auto at = bytes.find(std::string(reinterpret_cast<const char*>(stored.data()), 64));
  REQUIRE(at != std::string::npos);
  bytes[at + 30] = static_cast<char>(bytes[at + 30] ^ 0x40);
  std::ofstream(run.checkpoint(6), std::ios::binary) << bytes;
  auto eval = run_csrun({"eval", run.params, "--fake_data", "-o", run.model_dir.string(),
                         "--checkpoint_path", run.checkpoint(6)});
  INFO(eval.err);
  CHECK(eval.exit_code == 1);
  // The weights (50 KB) are below the size csrun reads itself, so HDF5 would read them: the
  // file's seal is what finds the flip, before HDF5 opens the file.
  CHECK(eval.err.find(run.checkpoint(6) +
                      " does not match its seal (the CRC-32C of all that HDF5 reads): the file is "
                      "corrupt") != std::string::npos);
}

TEST_CASE("stray names, directories and killed writes in model_dir do not stop a run") {
  TrainedRun run;
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  fs::path stale = run.model_dir / ("checkpoint_9.mdl.tmp." + std::to_string(child));
  std::ofstream(stale) << "half a checkpoint";
  std::ofstream(run.model_dir / "checkpoint_99999999999999999999999.mdl") << "stray";
  auto resumed = run.resume(9);
  INFO(resumed.out << resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.out.find("Removed " + stale.string() + ", left by a checkpoint write") !=
        std::string::npos);
  CHECK(resumed.out.find("Found latest checkpoint at \"" + run.checkpoint(6)) != std::string::npos);
  CHECK_FALSE(fs::exists(stale));

  fs::create_directory(run.checkpoint(40));
  auto directory = run.resume(12);
  CHECK(directory.exit_code == 1);
  CHECK(directory.err.find(run.checkpoint(40) + " is a directory, not a file") !=
        std::string::npos);
}

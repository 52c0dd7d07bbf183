// docs/training.md: num_csx replicas run in one process or as MPI ranks (mpirun on this machine's
// loopback here), with the same bits: the ranks add their gradients along a chain in rank order,
// as one process adds its replicas.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "support/process.hpp"
#include "support/same_weights.hpp"
#include "support/temp_dir.hpp"

using csrun::test::expect_same_weights;
using csrun::test::run_csrun;
namespace fs = std::filesystem;

namespace {

std::string params_text(int steps) {
  return "trainer:\n  init:\n    device: CSX\n    seed: 5\n    model: {name: fc_mnist, "
         "hidden_sizes: [32], compute_eval_metrics: true}\n    optimizer: {AdamW: {lr: 0.001}}\n"
         "    loop: {max_steps: " +
         std::to_string(steps) +
         "}\n    checkpoint: {steps: 10}\n    logging: {log_steps: 10}\n  fit:\n"
         "    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 32, "
         "micro_batch_size: 8}\n";
}

// mpirun as root needs its consent; --oversubscribe lets 2 ranks share fewer cores.
std::string mpirun(int ranks) {
  return std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " CSRUN_MPIEXEC
                     " -n ") +
         std::to_string(ranks) + " --oversubscribe ";
}

csrun::test::ProcessResult train_ranks(const std::string& params, const fs::path& model_dir) {
  std::string script = mpirun(2) + CSRUN_BINARY " train '" + params + "' --fake_data -o '" +
                       model_dir.string() + "' --num_csx 2 --num_workers_per_csx 0";
  return csrun::test::run_process({"/bin/sh", "-c", script});
}

}  // namespace

#ifdef CSRUN_MPIEXEC
TEST_CASE("num_csx 2 as 2 MPI ranks trains the bits of num_csx 2 in one process") {
  csrun::test::TempDir dir;
  std::string params = dir.write("params.yaml", params_text(20));
  auto one = run_csrun(
      {"train", params, "--fake_data", "-o", (dir.path() / "one").string(), "--num_csx", "2"});
  INFO(one.out << one.err);
  REQUIRE(one.exit_code == 0);
  auto ranks = train_ranks(params, dir.path() / "ranks");
  INFO(ranks.out << ranks.err);
  REQUIRE(ranks.exit_code == 0);
  expect_same_weights(dir.path() / "one" / "checkpoint_20.mdl",
                      dir.path() / "ranks" / "checkpoint_20.mdl");
  // The first rank writes the run's files; the ranks agree on the logged loss.
  CHECK(fs::exists(dir.path() / "ranks" / "cerebras_logs" / "latest" / "run.log"));
  CHECK(std::distance(fs::directory_iterator(dir.path() / "ranks" / "cerebras_logs"),
                      fs::directory_iterator()) == 2);  // one run directory and "latest"

  // A rank killed mid-run (one of this job's: other tests run csrun beside it) ends the job; the
  // same command resumes from the last checkpoint.
  fs::path killed = dir.path() / "killed";
  std::string script =
      mpirun(2) + CSRUN_BINARY " train '" + params + "' --fake_data -o '" + killed.string() +
      "' --num_csx 2 --num_workers_per_csx 0 --max_steps 20000 >'" + (dir.path() / "out").string() +
      "' 2>&1 & pid=$!\n" + "for i in $(seq 600); do [ -f '" +
      (killed / "checkpoint_10.mdl").string() + "' ] && break; sleep 0.05; done\n" +
      "kill -KILL $(pgrep -P $pid -x csrun | tail -1); wait $pid; echo status=$?\n";
  auto interrupted = csrun::test::run_process({"/bin/sh", "-c", script});
  INFO(interrupted.out);
  CHECK(interrupted.out.find("status=0") == std::string::npos);
  // Fast steps may have checkpointed further before the kill landed: resume from step 10.
  for (const auto& entry : fs::directory_iterator(killed)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("checkpoint_") && name != "checkpoint_10.mdl") fs::remove(entry.path());
  }
  auto resumed = train_ranks(params, killed);
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK((resumed.out + resumed.err).find("checkpoint_10.mdl") != std::string::npos);
  expect_same_weights(dir.path() / "one" / "checkpoint_20.mdl", killed / "checkpoint_20.mdl");
}

// Each rank reads only its replica's share of every batch, from its own data worker, and keeps
// its own ledger (the first rank's at the path given, rank r's at PATH.rank<r>).
TEST_CASE("2 MPI ranks read only their replicas' shares of the batch, from their own workers") {
  csrun::test::TempDir dir;
  std::string params = dir.write("params.yaml", params_text(3));
  fs::path ledger = dir.path() / "ledger.tsv";
  auto one = run_csrun(
      {"train", params, "--fake_data", "-o", (dir.path() / "one").string(), "--num_csx", "2"});
  REQUIRE(one.exit_code == 0);
  auto ranks = csrun::test::run_process(
      {"/bin/sh", "-c",
       mpirun(2) + CSRUN_BINARY " train '" + params + "' --fake_data -o '" +
           (dir.path() / "ranks").string() + "' --num_csx 2 --num_workers_per_csx 1 " +
           "--sample_ledger '" + ledger.string() + "'"});
  INFO(ranks.out << ranks.err);
  REQUIRE(ranks.exit_code == 0);
  expect_same_weights(dir.path() / "one" / "checkpoint_3.mdl",
                      dir.path() / "ranks" / "checkpoint_3.mdl");
  std::set<std::int64_t> indices;
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    std::ifstream lines(rank == 0 ? ledger : fs::path(ledger.string() + ".rank1"));
    std::string role, producer;
    std::int64_t epoch = 0, position = 0, index = 0, worker = -1, samples = 0;
    while (lines >> role >> epoch >> position >> index >> producer >> worker) {
      ++samples;
      indices.insert(index);
      CHECK(position % 32 / 16 == rank);  // the rank's half of each batch of 32
      CHECK(producer == "worker");
      CHECK(worker == rank);
    }
    CHECK(samples == 48);
  }
  CHECK(indices.size() == 96);
}

TEST_CASE("an MPI job whose ranks are not num_csx is refused with the command to run") {
  csrun::test::TempDir dir;
  std::string params = dir.write("params.yaml", params_text(2));
  auto run = csrun::test::run_process(
      {"/bin/sh", "-c",
       mpirun(2) + CSRUN_BINARY " train '" + params + "' --fake_data -o '" +
           (dir.path() / "m").string() +
           "' --num_csx 3 --set trainer.fit.train_dataloader.batch_size=48"});
  CHECK(run.exit_code != 0);
  CHECK((run.out + run.err)
            .find("the MPI job has 2 ranks and num_csx is 3: each rank runs one "
                  "replica, so start as many ranks as num_csx (mpirun -n 3)") != std::string::npos);
}
#endif

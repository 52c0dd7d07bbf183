#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "support/mnist_files.hpp"
#include "support/process.hpp"
#include "support/same_weights.hpp"
#include "support/temp_dir.hpp"

using csrun::test::expect_same_weights;
using csrun::test::read_file;
using csrun::test::run_csrun;
namespace fs = std::filesystem;

namespace {

std::string params_text(const fs::path& model_dir, int steps) {
  return "trainer:\n  init:\n    device: CSX\n    model_dir: " + model_dir.string() +
         "\n    seed: 11\n    model: {name: fc_mnist, hidden_sizes: [32], compute_eval_metrics: "
         "true}\n    optimizer: {SGD: {lr: 0.01, momentum: 0.9}}\n    loop: {max_steps: " +
         std::to_string(steps) +
         ", eval_frequency: 200, eval_steps: 3}\n    checkpoint: {steps: 200}\n"
         "    logging: {log_steps: 50}\n  fit:\n    train_dataloader: {data_processor: "
         "MNISTDataProcessor, batch_size: 16}\n    val_dataloader: {data_processor: "
         "MNISTDataProcessor, batch_size: 16}\n";
}

// Trains `steps` steps with `workers` local data workers; returns the model_dir.
fs::path train(csrun::test::TempDir& dir, const std::string& name, int workers, int steps) {
  fs::path model_dir = dir.path() / name;
  std::string params = dir.write(name + ".yaml", params_text(model_dir, steps));
  auto run =
      run_csrun({"train", params, "--fake_data", "--num_workers_per_csx", std::to_string(workers)});
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  return model_dir;
}

// Runs `csrun train` in the background under sh, waits until `ready` holds, stops csrun (SIGSTOP,
// a shell builtin, so a fast run cannot finish between the two), runs `action` (with $pid the
// csrun process), resumes csrun and waits for it; prints "status=N".
csrun::test::ProcessResult train_and_interrupt(const std::string& params, int workers,
                                               const std::string& extra, const std::string& ready,
                                               const std::string& action, const fs::path& out) {
  std::string script =
      std::string(CSRUN_BINARY) + " train '" + params + "' --fake_data --num_workers_per_csx " +
      std::to_string(workers) + " " + extra + " >'" + out.string() + "' 2>&1 & pid=$!\n" +
      "for i in $(seq 1500); do " + ready + " && break; sleep 0.02; done\nkill -STOP $pid\n" +
      action + "\nkill -CONT $pid\nwait $pid; echo status=$?\n";
  return csrun::test::run_process({"/bin/sh", "-c", script});
}

}  // namespace

TEST_CASE("streaming: 0, 1 and 3 local workers train bit-identical weights") {
  csrun::test::TempDir dir;
  fs::path none = train(dir, "none", 0, 60);
  fs::path one = train(dir, "one", 1, 60);
  fs::path three = train(dir, "three", 3, 60);
  expect_same_weights(none / "checkpoint_60.mdl", one / "checkpoint_60.mdl");
  expect_same_weights(none / "checkpoint_60.mdl", three / "checkpoint_60.mdl");
}

TEST_CASE("streaming: a worker killed mid-run changes nothing, each sample is consumed once") {
  csrun::test::TempDir dir;
  const int steps = 1200;
  fs::path reference = train(dir, "reference", 0, steps);
  fs::path model_dir = dir.path() / "killed";
  std::string params = dir.write("killed.yaml", params_text(model_dir, steps));
  fs::path ledger = dir.path() / "ledger.tsv";
  // Once 20 of the 1200 batches have been consumed, SIGKILL the first worker.
  auto run = train_and_interrupt(
      params, 3, "--sample_ledger '" + ledger.string() + "'",
      "[ \"$(wc -l <'" + ledger.string() + "' 2>/dev/null || echo 0)\" -gt 320 ]",
      "kill -KILL $(pgrep -P $pid | head -1)", dir.path() / "out");
  std::string log = read_file(dir.path() / "out");
  INFO(run.out << log);
  REQUIRE(run.out.find("status=0") != std::string::npos);
  CHECK(log.find("restarting data worker") != std::string::npos);
  // What happened to the worker is in the run's log, as a warning.
  std::string run_log = read_file(model_dir / "cerebras_logs" / "latest" / "run.log");
  CHECK(run_log.find("WARNING:     data stream: data worker ") != std::string::npos);
  CHECK(run_log.find("restarting data worker") != std::string::npos);
  expect_same_weights(reference / "checkpoint_1200.mdl", model_dir / "checkpoint_1200.mdl");

  // The ledger: train positions 0, 16, ... each once, every epoch's indices distinct.
  std::ifstream lines(ledger);
  std::string role, producer;
  std::int64_t epoch = 0, position = 0, index = 0;
  std::set<std::pair<std::int64_t, std::int64_t>> positions, indices;
  std::set<std::string> producers;
  std::int64_t train_samples = 0;
  while (lines >> role >> epoch >> position >> index >> producer) {
    lines >> producer;  // "worker N": two words
    if (role != "train") continue;
    ++train_samples;
    CHECK(positions.insert({epoch, position}).second);
    CHECK(indices.insert({epoch, index}).second);
    producers.insert(producer);
  }
  CHECK(train_samples == steps * 16);
  CHECK(positions.size() == static_cast<std::size_t>(steps * 16));
  CHECK(producers.size() >= 2);
}

// The socket directories /tmp/csrun-stream-<pid>-* of csrun process `pid`.
std::vector<fs::path> socket_directories(const std::string& pid) {
  std::vector<fs::path> found;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/tmp", error)) {
    if (entry.path().filename().string().starts_with("csrun-stream-" + pid + "-"))
      found.push_back(entry.path());
  }
  return found;
}

TEST_CASE("streaming: a killed coordinator leaves no workers, rerunning gives the same weights") {
  csrun::test::TempDir dir;
  const int steps = 1200;
  fs::path reference = train(dir, "reference", 0, steps);
  fs::path model_dir = dir.path() / "crashed";
  std::string params = dir.write("crashed.yaml", params_text(model_dir, steps));
  fs::path children = dir.path() / "children";
  auto run = train_and_interrupt(
      params, 2, "", "[ -f '" + (model_dir / "checkpoint_400.mdl").string() + "' ]",
      "pgrep -P $pid >'" + children.string() + "'; echo $pid >'" +
          (dir.path() / "coordinator").string() + "'; ls -d /tmp/csrun-stream-$pid-* >'" +
          (dir.path() / "sockets").string() + "'; kill -KILL $pid",
      dir.path() / "out");
  INFO(run.out << read_file(dir.path() / "out"));
  REQUIRE(run.out.find("status=137") != std::string::npos);
  std::string pids = read_file(children);
  REQUIRE_FALSE(pids.empty());
  std::istringstream list(pids);
  for (std::string pid; list >> pid;) {
    // Gone, or a zombie waiting for a reaper: not running either way.
    bool running = false;
    for (int wait = 0; wait < 100; ++wait) {
      std::string stat = read_file("/proc/" + pid + "/stat");
      running = !stat.empty() && stat.find(") Z ") == std::string::npos;
      if (!running) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    INFO("worker pid " << pid);
    CHECK_FALSE(running);
  }
  // The run had its sockets' directory when it was killed and could not remove it; the next run
  // with local workers does. (Any csrun starting local workers removes those of dead
  // coordinators: a test running beside this one may have removed it first.)
  REQUIRE_FALSE(read_file(dir.path() / "sockets").empty());
  std::string coordinator;
  std::istringstream(read_file(dir.path() / "coordinator")) >> coordinator;
  REQUIRE(socket_directories(coordinator).size() <= 1);
  auto again = run_csrun({"train", params, "--fake_data", "--num_workers_per_csx", "2"});
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(again.out.find("Found latest checkpoint") != std::string::npos);
  CHECK(socket_directories(coordinator).empty());
  expect_same_weights(reference / "checkpoint_1200.mdl", model_dir / "checkpoint_1200.mdl");
}

TEST_CASE("streaming: workers any launcher starts join a coordinator through --stream_listen") {
  csrun::test::TempDir dir;
  fs::path reference = train(dir, "reference", 0, 300);
  fs::path model_dir = dir.path() / "listening";
  std::string params = dir.write("listening.yaml", params_text(model_dir, 300));
  fs::path rendezvous = model_dir / "csrun-stream-0.rendezvous";
  std::string worker =
      std::string(CSRUN_BINARY) + " worker --secret_file '" + rendezvous.string() + "'";
  auto run = train_and_interrupt(
      params, 0, "--stream_listen 'tcp://127.0.0.1:*'", "[ -f '" + rendezvous.string() + "' ]",
      // One sends its batches through shared memory, the other in frames, as from another host.
      worker + " --rank 7 & CSRUN_STREAM_SHARED_MEMORY=0 " + worker + " --rank 8 &",
      dir.path() / "out");
  std::string log = read_file(dir.path() / "out");
  INFO(run.out << log);
  REQUIRE(run.out.find("status=0") != std::string::npos);
  CHECK(log.find("waiting for data workers at tcp://127.0.0.1:") != std::string::npos);
  CHECK(log.find("sends its batches in frames: it offers no shared memory") != std::string::npos);
  expect_same_weights(reference / "checkpoint_300.mdl", model_dir / "checkpoint_300.mdl");
  CHECK(fs::status(rendezvous).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  auto late = run_csrun({"worker", "--secret_file", rendezvous.string()});
  CHECK(late.exit_code == 0);
  CHECK(late.err.find("has finished; nothing to do") != std::string::npos);
  // Stamped as the run log's lines, naming the process.
  CHECK(late.err.find(",") == 19);
  CHECK(late.err.find(" INFO:     csrun worker: the coordinator of ") == 23);

  // The same command again, its worker started as soon as the rerun has removed the finished
  // run's file (before it writes its own): the worker waits for the new file and serves it.
  auto rerun = train_and_interrupt(params, 0, "--stream_listen 'tcp://127.0.0.1:*' --max_steps 320",
                                   "[ ! -f '" + rendezvous.string() + "' ]", worker + " --rank 9 &",
                                   dir.path() / "rerun");
  std::string rerun_log = read_file(dir.path() / "rerun");
  INFO(rerun.out << rerun_log);
  CHECK(rerun.out.find("status=0") != std::string::npos);
  CHECK(fs::exists(model_dir / "checkpoint_320.mdl"));
}

TEST_CASE("streaming: SIGTERM while no worker has joined yet stops the run at once") {
  csrun::test::TempDir dir;
  fs::path model_dir = dir.path() / "waiting";
  std::string params = dir.write("waiting.yaml", params_text(model_dir, 10));
  fs::path rendezvous = model_dir / "csrun-stream-0.rendezvous";
  std::string script =
      "CSRUN_WORKER_CONNECT_TIMEOUT=100 " + std::string(CSRUN_BINARY) + " train '" + params +
      "' --fake_data --stream_listen 'tcp://127.0.0.1:*' " + ">'" + (dir.path() / "out").string() +
      "' 2>&1 & pid=$!\n" + "for i in $(seq 1500); do [ -f '" + rendezvous.string() +
      "' ] && break; sleep 0.02; done\nkill -TERM $pid; wait $pid; " + "echo status=$?\n";
  auto run = csrun::test::run_process({"/bin/sh", "-c", script}, ".", 30);
  std::string log = read_file(dir.path() / "out");
  INFO(run.out << log);
  CHECK(run.out.find("status=1") != std::string::npos);
  CHECK(log.find("stopped on request (SIGTERM or SIGINT) while waiting for the first data "
                 "worker") != std::string::npos);
}

TEST_CASE(
    "streaming: SIGTERM while waiting for a worker to replace one that went away "
    "checkpoints the steps taken and stops at once") {
  csrun::test::TempDir dir;
  fs::path model_dir = dir.path() / "left";
  std::string params = dir.write("left.yaml", params_text(model_dir, 100000));
  fs::path rendezvous = model_dir / "csrun-stream-0.rendezvous";
  fs::path ledger = dir.path() / "ledger.tsv";
  fs::path out = dir.path() / "out";
  auto wait_for = [](const std::string& condition) {
    return "for i in $(seq 1500); do " + condition + " && break; sleep 0.02; done\n";
  };
  // The only worker is killed once 20 batches are read; once the run has dropped it (2 s of
  // silence), it waits for another (up to 100 s), and is asked to stop.
  std::string script =
      "CSRUN_WORKER_TIMEOUT=2 CSRUN_WORKER_CONNECT_TIMEOUT=100 " + std::string(CSRUN_BINARY) +
      " train '" + params + "' --fake_data --stream_listen 'tcp://127.0.0.1:*' --sample_ledger '" +
      ledger.string() + "' >'" + out.string() + "' 2>&1 & pid=$!\n" +
      wait_for("[ -f '" + rendezvous.string() + "' ]") + CSRUN_BINARY + " worker --secret_file '" +
      rendezvous.string() + "' >/dev/null 2>&1 & worker=$!\n" +
      wait_for("[ \"$(wc -l <'" + ledger.string() + "' 2>/dev/null || echo 0)\" -gt 320 ]") +
      "kill -KILL $worker\n" + wait_for("grep -q 'stopped answering' '" + out.string() + "'") +
      "kill -TERM $pid; wait $pid; echo status=$?\n";
  auto run = csrun::test::run_process({"/bin/sh", "-c", script}, ".", 60);
  std::string log = read_file(out);
  INFO(run.out << log);
  REQUIRE(run.out.find("status=143") != std::string::npos);
  CHECK(log.find("while waiting for a data worker to replace those that went away") !=
        std::string::npos);
  std::size_t at = log.find("Stopped at step ");
  REQUIRE(at != std::string::npos);
  int step = std::stoi(log.substr(at + 16));
  REQUIRE(fs::exists(model_dir / ("checkpoint_" + std::to_string(step) + ".mdl")));

  // The checkpoint holds the data position of the steps taken: resuming (reading in this process)
  // trains what an uninterrupted run does.
  auto resumed = run_csrun({"train", params, "--fake_data", "--num_workers_per_csx", "0",
                            "--max_steps", std::to_string(step + 5)});
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.exit_code == 0);
  fs::path reference = train(dir, "reference", 0, step + 5);
  std::string last = "checkpoint_" + std::to_string(step + 5) + ".mdl";
  expect_same_weights(reference / last, model_dir / last);
}

TEST_CASE(
    "streaming: a worker started in another directory reads the params' relative "
    "data_dir from the coordinator's, and names both where it cannot") {
  csrun::test::TempDir dir;
  fs::path run_dir = dir.path() / "run";
  fs::create_directories(dir.path() / "elsewhere");
  std::vector<unsigned char> labels(64);
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<unsigned char>(i % 10);
  csrun::test::write_mnist_files(run_dir / "digits", std::vector<unsigned char>(64 * 784, 9),
                                 labels);
  std::string params = dir.write(
      "p.yaml",
      "trainer:\n  init:\n    device: CPU\n    model_dir: " + (dir.path() / "model").string() +
          "\n    model: {name: fc_mnist, hidden_sizes: [8]}\n    optimizer: {SGD: {lr: "
          "0.1}}\n    loop: {max_steps: 20}\n  fit:\n    train_dataloader: "
          "{data_processor: MNISTDataProcessor, batch_size: 4, data_dir: digits}\n");
  fs::path rendezvous = dir.path() / "model" / "csrun-stream-0.rendezvous";
  // The run in run/, its worker in elsewhere/; `between` runs once the rendezvous file is there.
  auto train_with_worker_elsewhere = [&](const std::string& between) {
    std::string script =
        "cd '" + run_dir.string() + "' && CSRUN_WORKER_CONNECT_TIMEOUT=30 " + CSRUN_BINARY +
        " train '" + params + "' --stream_listen 'tcp://127.0.0.1:*' 2>&1 & pid=$!\n" +
        "for i in $(seq 1500); do [ -f '" + rendezvous.string() +
        "' ] && break; sleep 0.02; done\n" + between + "\ncd '" +
        (dir.path() / "elsewhere").string() + "' && " + CSRUN_BINARY + " worker --secret_file '" +
        rendezvous.string() + "' 2>&1\nwait $pid; echo status=$?\n";
    return csrun::test::run_process({"/bin/sh", "-c", script}, ".", 60);
  };
  auto served = train_with_worker_elsewhere("");
  INFO(served.out);
  CHECK(served.out.find("status=0") != std::string::npos);
  CHECK(served.out.find("reading the params' relative paths from the coordinator's directory " +
                        run_dir.string()) != std::string::npos);

  // The coordinator's directory is gone (as on a host without it): the worker reads from its
  // own, and its error says so.
  fs::remove_all(dir.path() / "model");
  auto failed = train_with_worker_elsewhere("mv '" + run_dir.string() + "' '" +
                                            (dir.path() / "moved").string() + "'");
  INFO(failed.out);
  CHECK(failed.out.find("status=1") != std::string::npos);
  CHECK(failed.out.find("(relative paths are read from this worker's directory " +
                        (dir.path() / "elsewhere").string() + ", since the coordinator's, " +
                        run_dir.string() + ", is not on this host)") != std::string::npos);
}

TEST_CASE("csrun worker: a missing secret or coordinator is a clear error") {
  auto no_secret =
      csrun::test::run_process({"/usr/bin/env", "-u", "CSRUN_STREAM_SECRET", CSRUN_BINARY, "worker",
                                "--connect", "tcp://127.0.0.1:1"});
  CHECK(no_secret.exit_code == 1);
  CHECK(no_secret.err.find("no secret: set CSRUN_STREAM_SECRET") != std::string::npos);
  auto no_address = run_csrun({"worker"});
  CHECK(no_address.exit_code == 2);  // a usage error
  CHECK(no_address.err.find("--connect ADDRESS or --secret_file FILE (the coordinator) is "
                            "required") != std::string::npos);
  csrun::test::TempDir dir;
  std::string rendezvous = dir.write("r", "nonsense\n");
  auto bad_file = run_csrun({"worker", "--secret_file", rendezvous});
  CHECK(bad_file.exit_code == 1);
  CHECK(bad_file.err.find("lacks an 'address' or a 'secret' line") != std::string::npos);

  auto nobody = csrun::test::run_process({"/usr/bin/env", "CSRUN_STREAM_SECRET=s",
                                          "CSRUN_WORKER_CONNECT_TIMEOUT=1", CSRUN_BINARY, "worker",
                                          "--connect", "tcp://127.0.0.1:9"});
  CHECK(nobody.exit_code == 1);
  CHECK(nobody.err.find("no coordinator answered at tcp://127.0.0.1:9 within 1 s") !=
        std::string::npos);
  auto not_seconds = csrun::test::run_process({"/usr/bin/env", "CSRUN_STREAM_SECRET=s",
                                               "CSRUN_WORKER_CONNECT_TIMEOUT=abc", CSRUN_BINARY,
                                               "worker", "--connect", "tcp://127.0.0.1:9"});
  CHECK(not_seconds.exit_code == 1);
  CHECK(not_seconds.err.find("CSRUN_WORKER_CONNECT_TIMEOUT='abc': expected a whole number of "
                             "seconds") != std::string::npos);
  CHECK(run_csrun({"worker", "--connect", "tcp://127.0.0.1:99999"}).exit_code == 2);
}

#include "data_stream.hpp"

#include <unistd.h>

#include <charconv>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "data/sample_ledger.hpp"
#include "runner/run_log.hpp"
#include "stream/coordinator.hpp"
#include "stream/rendezvous.hpp"
#include "stream/srun_tasks.hpp"

namespace csrun::modes {

namespace {

namespace fs = std::filesystem;

// Timeouts can be shortened for tests and for impatient clusters; a value that is not a whole
// number of seconds is an error, never a silent 1 s.
std::chrono::seconds seconds_from(const char* variable, std::int64_t fallback) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return std::chrono::seconds(fallback);
  std::string_view digits(text);
  std::int64_t seconds = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), seconds);
  constexpr std::int64_t kWeek = 7 * 24 * 3600;
  if (error != std::errc() || end != digits.data() + digits.size() || seconds < 1 ||
      seconds > kWeek) {
    throw std::runtime_error(std::string(variable) + "='" + text +
                             "': expected a whole number of seconds from 1 to " +
                             std::to_string(kWeek));
  }
  return std::chrono::seconds(seconds);
}

void report(const std::string& text) {
  static const runner::ProcessLog log("csrun: data stream");
  log.info(text);
}

// A trainer's rendezvous file: in its model_dir, named for the srun step (`step`) or, with `step`
// empty, for a coordinator waiting for workers of any launcher.
std::string rendezvous_file(const config::TrainerSpec& trainer, const std::string& step,
                            std::size_t trainer_index) {
  return (fs::path(trainer.model_dir) / stream::rendezvous_name(step, trainer_index)).string();
}

}  // namespace

DataStream::DataStream(const config::TrainerSpec& trainer, const runner::RunSetup& setup,
                       const Context& context)
    : ledger_(context.ledger) {
  std::vector<data::LoaderJob> jobs = runner::loader_jobs(setup);
  const config::ClusterConfig& cluster = trainer.backend.cluster;
  std::int64_t local = context.systems * cluster.num_workers_per_csx;
  bool external = context.srun || !context.listen.empty();
  if (jobs.empty() || (!external && (local == 0 || context.worker_binary.empty()))) return;

  stream::CoordinatorOptions options;
  options.secret = stream::make_secret();
  options.credits = 4;
  options.worker_timeout = seconds_from("CSRUN_WORKER_TIMEOUT", 30);
  options.connect_timeout = seconds_from("CSRUN_WORKER_CONNECT_TIMEOUT", 120);
  options.log = report;
  options.ledger = context.ledger;
  options.more_follow = context.more_trainers;
  if (context.srun) {
    options.bind = "tcp://*:*";
    if (const char* node = std::getenv("SLURMD_NODENAME")) options.host = node;
    publish(std::move(jobs), options,
            rendezvous_file(trainer, context.srun->step, context.trainer_index));
    report("coordinating " + std::to_string(context.srun->tasks - 1) +
           " srun tasks as data workers at " + coordinator_->address());
    return;
  }
  if (!context.listen.empty()) {
    options.bind = context.listen;
    if (const char* secret = std::getenv("CSRUN_STREAM_SECRET"); secret && *secret)
      options.secret = secret;
    publish(std::move(jobs), options, rendezvous_file(trainer, "", context.trainer_index));
    report("waiting for data workers at " + coordinator_->address() +
           ": start them with `csrun worker --secret_file " + rendezvous_ + "`");
    return;
  }
  char directory[] = "/tmp/csrun-stream-XXXXXX";
  if (!::mkdtemp(directory)) throw std::runtime_error("cannot create a directory under /tmp");
  socket_directory_ = directory;
  options.bind = "ipc://" + socket_directory_ + "/coordinator";
  options.local_workers = local;
  options.executable = context.worker_binary;
  coordinator_ = std::make_unique<stream::Coordinator>(std::move(jobs), options);
}

void DataStream::publish(std::vector<data::LoaderJob> jobs,
                         const stream::CoordinatorOptions& options, const std::string& file) {
  coordinator_ = std::make_unique<stream::Coordinator>(std::move(jobs), options);
  rendezvous_ = file;
  fs::create_directories(fs::path(file).parent_path());
  stream::write_rendezvous(rendezvous_, {coordinator_->address(), options.secret});
}

DataStream::~DataStream() {
  coordinator_.reset();
  std::error_code ignored;
  // Tasks that arrive after the run ended read that it has and exit.
  if (!rendezvous_.empty()) {
    try {
      stream::write_rendezvous(rendezvous_, {"none", "none", true});
    } catch (const std::exception&) {
      fs::remove(rendezvous_, ignored);
    }
  }
  if (!socket_directory_.empty()) fs::remove_all(socket_directory_, ignored);
}

void DataStream::connect(runner::RunSetup& setup) {
  if (!coordinator_) {
    if (ledger_) {
      data::SampleLedger* ledger = ledger_;
      setup.open_batches = [ledger](const data::LoaderJob& job, const auto&) {
        return data::read_in_process(job, ledger);
      };
    }
    return;
  }
  stream::Coordinator* coordinator = coordinator_.get();
  setup.open_batches = [coordinator](const data::LoaderJob& job, const auto& warn) {
    return coordinator->batches(job,
                                [warn](const std::string& text) { warn("data stream: " + text); });
  };
}

stream::WorkerOptions data_worker_options(std::int64_t rank, const std::string& name) {
  stream::WorkerOptions options;
  options.rank = rank;
  options.log = [log = runner::ProcessLog(name)](const std::string& text) { log.warning(text); };
  const char* shared = std::getenv("CSRUN_STREAM_SHARED_MEMORY");
  options.shared_memory = !(shared && std::string_view(shared) == "0");
  options.connect_timeout = seconds_from("CSRUN_WORKER_CONNECT_TIMEOUT", 120);
  return options;
}

int serve_srun_trainers(const std::vector<config::TrainerSpec>& trainers,
                        const stream::SrunTask& task) {
  // scancel and time limits signal every task: a worker keeps serving so its coordinator can
  // finish the step and checkpoint, and ends when the coordinator says bye or goes away.
  std::signal(SIGTERM, SIG_IGN);
  std::vector<std::string> files;
  for (std::size_t i = 0; i < trainers.size(); ++i)
    files.push_back(rendezvous_file(trainers[i], task.step, i));
  std::string name = "csrun worker (srun task " + std::to_string(task.rank) + ")";
  try {
    stream::serve_in_turn(files, data_worker_options(task.rank, name));
    return 0;
  } catch (const std::exception& error) {
    runner::ProcessLog(name).error(error.what());
    return 1;
  }
}

}  // namespace csrun::modes

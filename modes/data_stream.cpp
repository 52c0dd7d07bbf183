#include "data_stream.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

#include "data/sample_ledger.hpp"
#include "runner/run_log.hpp"
#include "storage/directories.hpp"
#include "storage/process_liveness.hpp"
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

void log_stream(const std::string& text) {
  static const runner::ProcessLog log("csrun: data stream");
  log.info(text);
}

// A trainer's rendezvous file: in its model_dir, named for the srun step (`step`) or, with `step`
// empty, for a coordinator waiting for workers of any launcher.
std::string rendezvous_file(const config::TrainerSpec& trainer, const std::string& step,
                            std::size_t trainer_index) {
  return (fs::path(trainer.model_dir) / stream::rendezvous_name(step, trainer_index)).string();
}

// The replicas this process runs, each with its training share (one job for the whole batch
// when the batch is not shared); the eval job goes with the first.
std::vector<std::vector<data::LoaderJob>> jobs_by_replica(std::vector<data::LoaderJob> jobs) {
  std::vector<std::vector<data::LoaderJob>> replicas;
  for (data::LoaderJob& job : jobs) {
    if (job.loader.role == data::LoaderRole::train) replicas.push_back({std::move(job)});
  }
  if (replicas.empty()) replicas.emplace_back();
  for (data::LoaderJob& job : jobs) {
    if (job.loader.role != data::LoaderRole::train) replicas.front().push_back(std::move(job));
  }
  return replicas;
}

}  // namespace

DataStream::DataStream(const config::TrainerSpec& trainer, const runner::RunSetup& setup,
                       const Context& context)
    : ledger_(context.ledger) {
  std::vector<data::LoaderJob> jobs = runner::loader_jobs(setup);
  std::int64_t workers = trainer.backend.cluster.num_workers_per_csx;
  bool external = context.srun || !context.listen.empty();
  if (jobs.empty() || (!external && (workers == 0 || context.worker_binary.empty()))) return;

  stream::CoordinatorOptions options;
  options.secret = stream::make_secret();
  options.stop_requested = setup.stop_requested;
  options.credits = 4;
  options.worker_timeout = seconds_from("CSRUN_WORKER_TIMEOUT", 30);
  options.connect_timeout = seconds_from("CSRUN_WORKER_CONNECT_TIMEOUT", 120);
  options.log = log_stream;
  options.ledger = context.ledger;
  options.more_follow = context.more_trainers;
  if (context.srun) {
    options.bind = "tcp://*:*";
    if (const char* node = std::getenv("SLURMD_NODENAME")) options.host = node;
    publish(std::move(jobs), options,
            rendezvous_file(trainer, context.srun->step, context.trainer_index));
    log_stream("coordinating " + std::to_string(context.srun->tasks - 1) +
               " srun tasks as data workers at " + coordinators_.front()->address());
    return;
  }
  if (!context.listen.empty()) {
    options.bind = context.listen;
    if (const char* secret = std::getenv("CSRUN_STREAM_SECRET"); secret && *secret)
      options.secret = secret;
    std::string file = rendezvous_file(trainer, "", context.trainer_index);
    options.start_workers_hint = "start workers with `csrun worker --secret_file " + file +
                                 "` while the run waits, or run without --stream_listen to read "
                                 "the data in this process or its own workers";
    publish(std::move(jobs), options, file);
    log_stream("waiting for data workers at " + coordinators_.front()->address() +
               ": start them with `csrun worker --secret_file " + rendezvous_ + "`");
    return;
  }
  start_local_workers(jobs_by_replica(std::move(jobs)), options, workers, context.worker_binary);
}

namespace {

// Local workers' sockets live in /tmp/csrun-stream-<pid>-XXXXXX, which the run removes when it
// ends.
constexpr std::string_view kSocketDirectoryPrefix = "/tmp/csrun-stream-";

// The socket directories this user's killed runs left behind: their process is gone.
void remove_dead_socket_directories() {
  std::error_code error;
  const fs::path parent = fs::path(kSocketDirectoryPrefix).parent_path();
  const std::string prefix = fs::path(kSocketDirectoryPrefix).filename().string();
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, error)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    std::string owner = name.substr(prefix.size());
    std::optional<int> pid = storage::parse_pid(owner.substr(0, owner.find('-')));
    struct stat info {};
    if (!pid || owner.find('-') == std::string::npos || ::lstat(entry.path().c_str(), &info) != 0 ||
        !S_ISDIR(info.st_mode) || info.st_uid != ::getuid() || storage::process_alive(*pid))
      continue;
    fs::remove_all(entry.path(), error);
  }
}

}  // namespace

// As the Model Zoo streams each CS-X system its own data: one coordinator per replica, with its
// own num_workers_per_csx children, which read that replica's share of each batch. Workers are
// numbered across the job (replica r's from r × num_workers_per_csx), so the ledger and the logs
// tell them apart.
void DataStream::start_local_workers(std::vector<std::vector<data::LoaderJob>> replicas,
                                     stream::CoordinatorOptions options, std::int64_t workers,
                                     const std::string& worker_binary) {
  remove_dead_socket_directories();
  std::string directory =
      std::string(kSocketDirectoryPrefix) + std::to_string(::getpid()) + "-XXXXXX";
  if (!::mkdtemp(directory.data()))
    throw std::runtime_error("cannot create a directory under /tmp");
  socket_directory_ = directory;
  options.local_workers = workers;
  options.executable = worker_binary;
  for (std::vector<data::LoaderJob>& jobs : replicas) {
    std::int64_t replica = jobs.front().share;
    options.bind = "ipc://" + socket_directory_ + "/coordinator-" + std::to_string(replica);
    options.first_worker_rank = replica * workers;
    coordinators_.push_back(std::make_unique<stream::Coordinator>(std::move(jobs), options));
  }
}

void DataStream::publish(std::vector<data::LoaderJob> jobs,
                         const stream::CoordinatorOptions& options, const std::string& file) {
  coordinators_.push_back(std::make_unique<stream::Coordinator>(std::move(jobs), options));
  rendezvous_ = file;
  storage::make_directories(fs::path(file).parent_path());
  stream::write_rendezvous(rendezvous_, {coordinators_.front()->address(), options.secret});
}

DataStream::~DataStream() {
  coordinators_.clear();
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
  if (coordinators_.empty()) {
    if (ledger_) {
      data::SampleLedger* ledger = ledger_;
      setup.open_batches = [ledger](const data::LoaderJob& job, const auto&) {
        return data::read_in_process(job, ledger);
      };
    }
    return;
  }
  // A share's coordinator: its replica's (this process's replicas are consecutive shares, one
  // coordinator each), or the only one (srun, --stream_listen, one replica).
  std::vector<stream::Coordinator*> coordinators;
  for (const auto& coordinator : coordinators_)
    coordinators.push_back(coordinator.get());
  setup.open_batches = [coordinators](const data::LoaderJob& job, const auto& warn) {
    std::size_t index = 0;
    if (coordinators.size() > 1 && job.loader.role == data::LoaderRole::train)
      index = static_cast<std::size_t>(job.share % static_cast<std::int64_t>(coordinators.size()));
    return coordinators[index]->batches(
        job, [warn](const std::string& text) { warn("data stream: " + text); });
  };
}

void withdraw_earlier_rendezvous(const std::vector<config::TrainerSpec>& trainers) {
  std::error_code ignored;
  for (std::size_t i = 0; i < trainers.size(); ++i)
    fs::remove(rendezvous_file(trainers[i], "", i), ignored);
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

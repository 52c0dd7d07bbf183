#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/run_spec.hpp"
#include "runner/training_loop.hpp"
#include "stream/srun_tasks.hpp"
#include "stream/worker.hpp"

namespace csrun::stream {
class Coordinator;
struct CoordinatorOptions;
}  // namespace csrun::stream
namespace csrun::data {
class SampleLedger;
}

namespace csrun::modes {

// Where one trainer's batches come from, for as long as it lives: read in this process
// (num_workers_per_csx: 0), streamed from local child workers (num_workers_per_csx of them for
// each replica this process runs, reading that replica's share), from the other tasks of the
// srun step, or from workers any launcher starts (--stream_listen).
class DataStream {
 public:
  struct Context {
    std::size_t trainer_index = 0;
    bool more_trainers = false;
    data::SampleLedger* ledger = nullptr;
    std::optional<stream::SrunTask> srun;
    std::string worker_binary;  // what local workers run; empty: no local workers
    std::string listen;         // --stream_listen: wait for workers started elsewhere
  };

  DataStream(const config::TrainerSpec& trainer, const runner::RunSetup& setup,
             const Context& context);
  ~DataStream();
  DataStream(const DataStream&) = delete;
  DataStream& operator=(const DataStream&) = delete;

  // Sets setup.open_batches (left empty when the data is read in this process).
  void connect(runner::RunSetup& setup);

 private:
  // Starts the coordinator and writes its rendezvous file for workers to find.
  void publish(std::vector<data::LoaderJob> jobs, const stream::CoordinatorOptions& options,
               const std::string& file);
  void start_local_workers(std::vector<std::vector<data::LoaderJob>> replicas,
                           stream::CoordinatorOptions options, std::int64_t workers,
                           const std::string& worker_binary);

  data::SampleLedger* ledger_;
  std::vector<std::unique_ptr<stream::Coordinator>> coordinators_;
  std::string socket_directory_;
  std::string rendezvous_;
};

// A data worker of this process with rank `rank` (-1: any), its notes on stderr after `name`:
// it offers shared memory unless CSRUN_STREAM_SHARED_MEMORY is 0. The caller adds the address.
stream::WorkerOptions data_worker_options(std::int64_t rank, const std::string& name);

// Removes the rendezvous files an earlier run with --stream_listen left in the trainers' model
// dirs, as soon as a run starts: a worker started beside this run then waits for this run's file
// instead of reading the earlier one's address and secret.
void withdraw_earlier_rendezvous(const std::vector<config::TrainerSpec>& trainers);

// The data worker side of an srun step (tasks other than 0): serves each trainer's coordinator
// in turn. Returns the exit status.
int serve_srun_trainers(const std::vector<config::TrainerSpec>& trainers,
                        const stream::SrunTask& task);

}  // namespace csrun::modes

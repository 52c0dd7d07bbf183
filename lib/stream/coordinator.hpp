#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_source.hpp"

namespace csrun::data {
class SampleLedger;
}

namespace csrun::stream {

struct CoordinatorOptions {
  std::string bind;    // where to listen: ipc:///path, or tcp://*:* (any free port)
  std::string host;    // tcp: the name workers reach this host by (empty: its host name)
  std::string secret;  // what workers must present in their hello
  std::int64_t local_workers = 0;                   // children to start, and restart when they fail
  std::int64_t first_worker_rank = 0;               // the children's ranks count from here
  std::string executable;                           // the csrun binary those children run
  int credits = 4;                                  // batches in flight per worker
  std::chrono::milliseconds worker_timeout{30000};  // silence after which a worker is dead
  std::chrono::milliseconds connect_timeout{120000};  // how long to wait with no worker at all
  std::function<void(const std::string&)> log;        // warnings and notes for the run's log
  data::SampleLedger* ledger = nullptr;
  bool more_follow = false;  // the bye tells workers another coordinator (trainer) follows
  // How to start workers, for the error when none connects (empty: `csrun worker --connect`
  // with the secret in CSRUN_STREAM_SECRET, or num_workers_per_csx: 0).
  std::string start_workers_hint;
  // Set (from a signal handler) when the run must stop: a coordinator that no worker has joined
  // yet stops waiting for one (nothing has been read, so nothing is lost) instead of waiting out
  // connect_timeout.
  const std::atomic<bool>* stop_requested = nullptr;
};

// The coordinator of a run's data streaming: listens for data workers, authenticates them by
// the job's secret, sends them the loader jobs, asks each for batches (at most `credits` in
// flight) and hands the batches to the loop in the run's order, whichever worker produced
// them. A worker that ends or stops answering has its batches given to the others (and, when
// it is a local child, is restarted). Bad peers and malformed frames are logged and dropped.
class Coordinator {
 public:
  Coordinator(std::vector<data::LoaderJob> jobs, CoordinatorOptions options);
  ~Coordinator();  // says bye to the workers and ends the local children
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Where workers connect (the bound endpoint, with this host's name for tcp).
  const std::string& address() const;
  // The batches of the job with this job's role and share, streamed. Valid while the coordinator
  // lives.
  // While they are open, the coordinator's notes go to `log` (when given) instead of the
  // options' log: the run's own log, say, which lives as long as its batches.
  std::unique_ptr<data::BatchSource> batches(const data::LoaderJob& job,
                                             std::function<void(const std::string&)> log = {});

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace csrun::stream

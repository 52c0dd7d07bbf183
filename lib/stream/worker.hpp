#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace csrun::stream {

struct WorkerOptions {
  std::string address;  // the coordinator's endpoint
  std::string secret;
  std::int64_t rank = -1;  // the worker's number (its SLURM task, its launch slot); -1: any
  // The rendezvous file the address came from, if any: while no coordinator has answered, a
  // file that says the coordinator finished ends the worker.
  std::string rendezvous_file;
  std::chrono::milliseconds connect_timeout{120000};
  std::chrono::milliseconds heartbeat{1000};
  // Offer the coordinator batch slots in shared memory (used when it is on the same host);
  // without them every batch travels in its frame.
  bool shared_memory = true;
  std::function<void(const std::string&)> log;  // notes for the worker's output
};

enum class WorkerEnd {
  finished,          // the coordinator said bye: the run is over
  next_trainer,      // bye, and another trainer's coordinator follows
  coordinator_gone,  // the connection dropped: the coordinator ended or died
};

// A data worker: connects to the coordinator, authenticates, opens the datasets the coordinator
// describes and produces the batches it asks for until it says bye or goes away. Throws
// std::runtime_error when rejected, when no coordinator answers within connect_timeout, or
// when the data cannot be read (after telling the coordinator why).
WorkerEnd run_worker(const WorkerOptions& options);

}  // namespace csrun::stream

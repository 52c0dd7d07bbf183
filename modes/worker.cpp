#include <cstdlib>

#include "data_stream.hpp"
#include "modes.hpp"
#include "runner/run_log.hpp"
#include "stream/rendezvous.hpp"
#include "stream/worker.hpp"

namespace csrun::modes {

namespace {

stream::WorkerOptions worker_options(const WorkerCommand& command) {
  stream::WorkerOptions options = data_worker_options(command.rank, "csrun worker");
  options.address = command.address;
  if (!command.secret_file.empty()) {
    // A worker may start beside its coordinator, before the file is written (a coordinator
    // removes an earlier run's file as it starts).
    stream::Rendezvous rendezvous = stream::wait_for_rendezvous(
        command.secret_file,
        std::chrono::duration_cast<std::chrono::seconds>(options.connect_timeout));
    if (options.address.empty()) options.address = rendezvous.address;
    options.secret = rendezvous.secret;
    options.rendezvous_file = command.secret_file;
  } else if (const char* secret = std::getenv("CSRUN_STREAM_SECRET")) {
    options.secret = secret;
  }
  if (options.address.empty())
    throw std::runtime_error(
        "no coordinator to connect to: give --connect ADDRESS or --secret_file");
  if (options.secret.empty()) {
    throw std::runtime_error(
        "no secret: set CSRUN_STREAM_SECRET or give --secret_file RENDEZVOUS_FILE");
  }
  return options;
}

// A worker started after its run ended has nothing to do, which is not an error.
bool coordinator_finished(const WorkerCommand& command) {
  if (command.secret_file.empty()) return false;
  std::optional<stream::Rendezvous> rendezvous = stream::read_rendezvous(command.secret_file);
  return rendezvous && rendezvous->finished;
}

}  // namespace

int worker(const WorkerCommand& command) {
  runner::ProcessLog log("csrun worker");
  try {
    if (coordinator_finished(command)) {
      log.info("the coordinator of " + command.secret_file + " has finished; nothing to do");
      return 0;
    }
    stream::WorkerOptions options = worker_options(command);
    options.log = [&log](const std::string& text) { log.info(text); };
    stream::WorkerEnd end = stream::run_worker(options);
    if (end == stream::WorkerEnd::coordinator_gone) log.info("the coordinator went away; exiting");
    return 0;
  } catch (const std::exception& error) {
    log.error(error.what());
    return 1;
  }
}

}  // namespace csrun::modes

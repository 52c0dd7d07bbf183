#include "srun_tasks.hpp"

#include <cstdlib>

#include "rendezvous.hpp"
#include "worker.hpp"

namespace csrun::stream {

namespace {

std::optional<std::int64_t> integer_variable(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (*end != '\0') return std::nullopt;
  return value;
}

}  // namespace

std::optional<SrunTask> srun_task() {
  auto rank = integer_variable("SLURM_PROCID");
  auto tasks = integer_variable("SLURM_STEP_NUM_TASKS");
  if (!tasks) tasks = integer_variable("SLURM_NTASKS");
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* step = std::getenv("SLURM_STEP_ID");
  if (!rank || !tasks || *tasks < 2 || !job || !step) return std::nullopt;
  return SrunTask{*rank, *tasks, std::string(job) + "." + step};
}

std::string rendezvous_name(const std::string& step, std::size_t index) {
  return "csrun-stream-" + (step.empty() ? "" : step + "-") + std::to_string(index) + ".rendezvous";
}

void serve_in_turn(std::span<const std::string> rendezvous_files, const WorkerOptions& worker) {
  for (const std::string& file : rendezvous_files) {
    Rendezvous rendezvous = wait_for_rendezvous(
        file, std::chrono::duration_cast<std::chrono::seconds>(worker.connect_timeout));
    if (rendezvous.finished) continue;
    WorkerOptions options = worker;
    options.address = rendezvous.address;
    options.secret = rendezvous.secret;
    options.rendezvous_file = file;
    if (run_worker(options) != WorkerEnd::next_trainer) return;
  }
}

}  // namespace csrun::stream

#include "run_reports.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "storage/atomic_file.hpp"

namespace csrun::runner {

namespace {

// The Model Zoo's rate format: 3 significant digits below 1, else 2 decimals.
std::string format_rate(double rate) {
  char text[64];
  std::snprintf(text, sizeof text, rate < 1.0 ? "%.3g" : "%.2f", rate);
  return text;
}

std::string format_loss(double loss) {
  char text[64];
  std::snprintf(text, sizeof text, "%.5f", loss);
  return text;
}

}  // namespace

RunReports::RunReports(RunLog& log, std::string device, std::int64_t log_steps,
                       const std::string& events_directory)
    : log_(log),
      device_(std::move(device)),
      log_steps_(std::max<std::int64_t>(1, log_steps)),
      events_(events_directory) {}

bool RunReports::log_step(std::int64_t count, const RunState& state) const {
  return state.done == state.total || count % log_steps_ == 0;
}

void RunReports::on_train_batch_end(const RunState& state) {
  train_rate_.add(state.batch_size);
  if (!log_step(state.global_step, state)) return;
  double local = train_rate_.local();
  double global = train_rate_.global();
  log_.info("| Train Device=" + device_ + ", Step=" + std::to_string(state.global_step) +
            ", Loss=" + format_loss(state.loss) + ", Rate=" + format_rate(local) +
            " samples/sec, GlobalRate=" + format_rate(global) + " samples/sec");
  events_.scalar("loss", state.loss, state.global_step);
  events_.scalar("local_samples_per_sec", local, state.global_step);
  events_.scalar("avg_samples_per_sec", global, state.global_step);
  if (state.learning_rate) events_.scalar("lr/0", *state.learning_rate, state.global_step);
  if (state.loss_scale) events_.scalar("loss_scale", *state.loss_scale, state.global_step);
  events_.flush();
}

void RunReports::on_train_end(const RunState& state) {
  auto samples = static_cast<double>(train_rate_.samples());
  double host_seconds = train_rate_.elapsed_seconds();
  log_.info("Processed " + std::to_string(train_rate_.samples()) + " training sample(s) in " +
            format_rate(host_seconds) + " seconds.");
  if (state.simulated_seconds > 0.0) {
    log_.info("Simulated " + device_ + " time: " + format_rate(state.simulated_seconds) +
              " seconds, " + format_rate(samples / state.simulated_seconds) +
              " samples/sec on the wafer model (host: " + format_rate(samples / host_seconds) +
              " samples/sec).");
  }
  write_performance(state, host_seconds);
}

void RunReports::write_performance(const RunState& state, double host_seconds) const {
  auto samples = static_cast<double>(train_rate_.samples());
  double simulated = state.simulated_seconds;
  nlohmann::json performance{
      {"device", device_},
      {"total_samples", train_rate_.samples()},
      {"total_time", host_seconds},
      {"samples_per_sec", samples / std::max(host_seconds, 1e-9)},
      {"simulated_time", simulated},
      {"simulated_samples_per_sec",
       simulated > 0.0 ? nlohmann::json(samples / simulated) : nlohmann::json(nullptr)},
      {"global_step", state.global_step}};
  storage::write_file_atomically(std::filesystem::path(log_.directory()) / "performance.json",
                                 performance.dump(2) + "\n");
}

void RunReports::on_eval_batch_end(const RunState& state) {
  eval_rate_.add(state.batch_size);
  if (!log_step(state.done, state)) return;
  log_.info("| Eval Device=" + device_ + ", GlobalStep=" + std::to_string(state.global_step) +
            ", Batch=" + std::to_string(state.done) + ", Loss=" + format_loss(state.loss) +
            ", Rate=" + format_rate(eval_rate_.local()) +
            " samples/sec, GlobalRate=" + format_rate(eval_rate_.global()) + " samples/sec");
}

void RunReports::on_eval_end(const RunState& state) {
  log_.info("Avg Eval Loss: " + format_loss(state.eval_loss));
  log_.info("Evaluation metrics:");
  for (const auto& [name, value] : state.metrics)
    log_.info("  - " + name + " = " + std::to_string(value));
  events_.scalar("validate_0/loss", state.eval_loss, state.global_step);
  for (const auto& [name, value] : state.metrics)
    events_.scalar("validate_0/" + name, value, state.global_step);
  events_.flush();
}

}  // namespace csrun::runner

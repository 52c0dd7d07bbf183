#pragma once

#include <cstdint>
#include <string>

#include "callbacks.hpp"
#include "event_file.hpp"
#include "rate_meter.hpp"
#include "run_log.hpp"

namespace csrun::runner {

// The run's logs and summaries, a built-in hook: the Model Zoo's "| Train Device=..." and
// "| Eval ..." lines every log_steps batches and at the last, the eval summary, TensorBoard
// scalars in model_dir/events (loss, rates, lr/0, loss_scale, validate_0/<metric>), and at the
// end of fit the samples processed, the simulated wafer time and performance.json.
class RunReports : public Callback {
 public:
  RunReports(RunLog& log, std::string device, std::int64_t log_steps,
             const std::string& events_directory);

  void on_train_start(const RunState&) override { train_rate_.restart(); }
  void on_train_batch_end(const RunState& state) override;
  void on_train_end(const RunState& state) override;
  void on_eval_start(const RunState&) override { eval_rate_.restart(); }
  void on_eval_batch_end(const RunState& state) override;
  void on_eval_end(const RunState& state) override;

 private:
  bool log_step(std::int64_t count, const RunState& state) const;
  void write_performance(const RunState& state, double host_seconds) const;

  RunLog& log_;
  std::string device_;
  std::int64_t log_steps_;
  EventFile events_;
  RateMeter train_rate_;
  RateMeter eval_rate_;
};

}  // namespace csrun::runner

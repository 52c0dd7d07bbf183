#pragma once

#include "callbacks.hpp"
#include "rate_meter.hpp"
#include "run_log.hpp"

namespace csrun::runner {

// The live progress line of fit and eval runs, a built-in hook: after every batch on a terminal,
// erased when the stage ends or fails.
class LiveProgress : public Callback {
 public:
  explicit LiveProgress(RunLog& log) : log_(log) {}

  void on_train_start(const RunState&) override { train_rate_.restart(); }
  void on_train_batch_end(const RunState& state) override { show("Train", state, train_rate_); }
  void on_train_end(const RunState&) override { log_.progress().finish(); }
  void on_eval_start(const RunState&) override { eval_rate_.restart(); }
  void on_eval_batch_end(const RunState& state) override { show("Eval ", state, eval_rate_); }
  void on_eval_end(const RunState&) override { log_.progress().finish(); }
  void on_exception(const RunState&, const std::exception&) override { log_.progress().finish(); }

 private:
  void show(const char* stage, const RunState& state, RateMeter& rate);

  RunLog& log_;
  RateMeter train_rate_;
  RateMeter eval_rate_;
};

}  // namespace csrun::runner

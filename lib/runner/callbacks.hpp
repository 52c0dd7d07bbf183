#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/node.hpp"

namespace csrun::runner {

// What hooks see of the run.
struct RunState {
  std::int64_t global_step = 0;  // optimizer steps taken
  std::int64_t epoch = 0;        // training: global_step / steps_per_epoch
  std::int64_t batch = 0;        // 1-based, within the epoch (train) or the eval run
  std::int64_t done = 0;         // batches this fit or eval run has taken
  std::int64_t total = 0;        // batches this fit or eval run takes
  std::int64_t batch_size = 0;   // samples per batch of the step running
  double loss = 0.0;             // of the last batch
  // Training: the outputs of the last step that the model has.
  std::optional<double> learning_rate;
  std::optional<double> loss_scale;
  // Once an eval run ends: its mean loss and metrics, averaged as the model declares.
  double eval_loss = 0.0;
  std::map<std::string, double> metrics;
  double simulated_seconds = 0.0;  // at train end: the wafer model's time of this fit's steps
};

// Hooks of the Model Zoo's Trainer. *_end hooks run only when their stage succeeded; on an
// exception, on_exception runs instead and the exception continues.
class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_start(const RunState&) {}
  virtual void on_train_end(const RunState&) {}
  virtual void on_train_epoch_start(const RunState&) {}
  virtual void on_train_epoch_end(const RunState&) {}
  virtual void on_train_batch_start(const RunState&) {}
  virtual void on_train_batch_end(const RunState&) {}
  virtual void on_eval_start(const RunState&) {}
  virtual void on_eval_end(const RunState&) {}
  virtual void on_eval_epoch_start(const RunState&) {}
  virtual void on_eval_epoch_end(const RunState&) {}
  virtual void on_eval_batch_start(const RunState&) {}
  virtual void on_eval_batch_end(const RunState&) {}
  virtual void on_exception(const RunState&, const std::exception&) {}
};

// User callbacks come through a registry: a name (as params list it under callbacks) and a
// factory given the callback's params. Registering needs no change to the runner.
using CallbackFactory = std::function<std::unique_ptr<Callback>(const config::Node& params)>;
void register_callback(const std::string& name, CallbackFactory factory);
bool has_callback(std::string_view name);
std::unique_ptr<Callback> make_callback(std::string_view name, const config::Node& params);

// Calls a hook on every callback in order.
class CallbackList {
 public:
  void add(std::unique_ptr<Callback> callback) { callbacks_.push_back(std::move(callback)); }
  template <class Hook>
  void call(Hook hook, const RunState& state) {
    for (auto& callback : callbacks_)
      ((*callback).*hook)(state);
  }
  void exception(const RunState& state, const std::exception& error) {
    for (auto& callback : callbacks_)
      callback->on_exception(state, error);
  }

 private:
  std::vector<std::unique_ptr<Callback>> callbacks_;
};

}  // namespace csrun::runner

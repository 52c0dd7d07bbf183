#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace csrun::runner {

// Host samples/s over the last window and since the start of a stage.
class RateMeter {
 public:
  using Clock = std::chrono::steady_clock;

  void restart() { *this = RateMeter(); }
  void add(std::int64_t count) {
    samples_ += count;
    window_samples_ += count;
  }
  // Samples/s since the last call (or the start); starts the next window.
  double local() {
    double rate = static_cast<double>(window_samples_) / std::max(seconds_since(window_), 1e-9);
    window_ = Clock::now();
    window_samples_ = 0;
    return rate;
  }
  double global() const {
    return static_cast<double>(samples_) / std::max(elapsed_seconds(), 1e-9);
  }
  double elapsed_seconds() const { return seconds_since(start_); }
  std::int64_t samples() const { return samples_; }

 private:
  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  Clock::time_point start_ = Clock::now();
  Clock::time_point window_ = start_;
  std::int64_t samples_ = 0;
  std::int64_t window_samples_ = 0;
};

}  // namespace csrun::runner

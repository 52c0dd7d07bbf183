#include "stop_signal.hpp"

#include <csignal>

namespace csrun::modes {

namespace {

std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

struct sigaction previous_term {};
struct sigaction previous_int {};

void request_stop(int) {
  stop_requested.store(true);
}

}  // namespace

StopSignal::StopSignal() {
  stop_requested.store(false);
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGTERM, &action, &previous_term);
  sigaction(SIGINT, &action, &previous_int);
}

StopSignal::~StopSignal() {
  sigaction(SIGTERM, &previous_term, nullptr);
  sigaction(SIGINT, &previous_int, nullptr);
}

const std::atomic<bool>& StopSignal::requested() const {
  return stop_requested;
}

}  // namespace csrun::modes

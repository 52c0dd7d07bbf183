#include "stop_signal.hpp"

#include <csignal>
#include <cstdint>
#include <ctime>

namespace csrun::modes {

namespace {

std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
std::atomic<std::int64_t> first_request_ns{0};
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "set from a signal handler");

// GNU timeout sends its signal to the command and again to the command's process group: both
// arrive at once and are one request. A second request later ends the process.
constexpr std::int64_t kOneRequestNs = 1'000'000'000;

struct sigaction previous_term {};
struct sigaction previous_int {};

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

void request_stop(int signal) {
  std::int64_t now = monotonic_ns();
  if (!stop_requested.exchange(true)) {
    first_request_ns.store(now);
    return;
  }
  if (now - first_request_ns.load() < kOneRequestNs) return;
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal, &default_action, nullptr);
  raise(signal);
}

}  // namespace

StopSignal::StopSignal() {
  stop_requested.store(false);
  struct sigaction action {};
  action.sa_handler = request_stop;
  // Neither signal interrupts the handler of the other.
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGTERM);
  sigaddset(&action.sa_mask, SIGINT);
  action.sa_flags = SA_RESTART;
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

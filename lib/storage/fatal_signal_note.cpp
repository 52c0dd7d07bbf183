#include "fatal_signal_note.hpp"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <iterator>
#include <string_view>

namespace csrun::storage {

namespace {

// Read by the signal handler: a thread-local pointer in the executable is a plain load there.
thread_local const FatalSignalNote* current_note = nullptr;

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

std::string_view signal_name(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV (invalid memory access)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGFPE:
      return "SIGFPE (arithmetic error)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGABRT:
      return "SIGABRT (aborted)";
    default:
      return "fatal signal";
  }
}

// Only write(2) here: the handler may run anywhere, inside malloc included.
void write_all(std::string_view text) {
  while (!text.empty()) {
    ssize_t written = ::write(STDERR_FILENO, text.data(), text.size());
    if (written <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(written));
  }
}

// What each signal did before csrun's handler: the default action, or a sanitizer's report.
struct sigaction previous_actions[std::size(kFatalSignals)];

void on_fatal_signal(int signal, siginfo_t* info, void*) {
  if (const FatalSignalNote* note = current_note) {
    write_all("csrun: ");
    write_all(signal_name(signal));
    write_all(": ");
    write_all(note->text());
    write_all("\n");
  }
  // The signal then does what it did before (the process ends, a core dump where those are
  // enabled, the signal in its exit status; a sanitizer reports it): a fault, once this handler
  // returns, as its instruction runs again; a signal sent (kill, raise, abort) is sent again.
  for (std::size_t i = 0; i < std::size(kFatalSignals); ++i) {
    if (kFatalSignals[i] == signal) sigaction(signal, &previous_actions[i], nullptr);
  }
  if (info->si_code <= 0) std::raise(signal);
}

}  // namespace

FatalSignalNote::FatalSignalNote(const std::string& text) : enclosing_(current_note), text_(text) {
  current_note = this;
}

FatalSignalNote::~FatalSignalNote() {
  current_note = enclosing_;
}

void note_fatal_signals() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = on_fatal_signal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < std::size(kFatalSignals); ++i)
    sigaction(kFatalSignals[i], &action, &previous_actions[i]);
}

}  // namespace csrun::storage

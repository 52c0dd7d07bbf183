#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <functional>
#include <string>

#include "storage/fatal_signal_note.hpp"

using csrun::storage::FatalSignalNote;

namespace {

struct Ending {
  int signal = 0;  // 0: the child exited
  int exit_code = -1;
  std::string stderr_text;
};

// Runs `body` in a child process with the notes installed, its stderr captured; SIGSEGV's
// handler before them is `previous_handler` (none: the default action).
Ending run_child(const std::function<void()>& body, void (*previous_handler)(int) = nullptr) {
  int pipe_ends[2];
  REQUIRE(::pipe(pipe_ends) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(pipe_ends[1], STDERR_FILENO);
    ::close(pipe_ends[0]);
    // Before the notes, each signal has its default action (not a sanitizer's report).
    for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      std::signal(signal, SIG_DFL);
    if (previous_handler) std::signal(SIGSEGV, previous_handler);
    csrun::storage::note_fatal_signals();
    body();
    ::_exit(0);
  }
  ::close(pipe_ends[1]);
  Ending ending;
  char buffer[512];
  for (ssize_t got; (got = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0;)
    ending.stderr_text.append(buffer, static_cast<std::size_t>(got));
  ::close(pipe_ends[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  if (WIFSIGNALED(status)) ending.signal = WTERMSIG(status);
  if (WIFEXITED(status)) ending.exit_code = WEXITSTATUS(status);
  return ending;
}

// A handler of SIGSEGV that was there before the notes, as a sanitizer's is.
void report_and_exit(int) {
  constexpr char kReport[] = "the previous handler's report\n";
  ::write(STDERR_FILENO, kReport, sizeof kReport - 1);
  ::_exit(3);
}

}  // namespace

TEST_CASE("a fatal signal inside a note prints it, then ends the process as the signal does") {
  Ending ending = run_child([] {
    std::string text = "while libhdf5 read 'data/train_3.h5'";
    FatalSignalNote note(text);
    std::raise(SIGSEGV);
  });
  CHECK(ending.signal == SIGSEGV);
  CHECK(ending.stderr_text ==
        "csrun: SIGSEGV (invalid memory access): while libhdf5 read 'data/train_3.h5'\n");
}

TEST_CASE("notes nest: the innermost is printed, the enclosing one again once it ends") {
  std::string outer = "reading the outer file";
  std::string inner = "reading the inner file";
  Ending inside = run_child([&] {
    FatalSignalNote first(outer);
    FatalSignalNote second(inner);
    std::abort();
  });
  CHECK(inside.signal == SIGABRT);
  CHECK(inside.stderr_text == "csrun: SIGABRT (aborted): reading the inner file\n");
  Ending after = run_child([&] {
    FatalSignalNote first(outer);
    { FatalSignalNote second(inner); }
    std::raise(SIGBUS);
  });
  CHECK(after.signal == SIGBUS);
  CHECK(after.stderr_text == "csrun: SIGBUS (bus error): reading the outer file\n");
}

TEST_CASE("after the note, a signal goes to the handler it had before, a fault as a fault") {
  Ending raised = run_child(
      [] {
        std::string text = "while libhdf5 read 'a.h5'";
        FatalSignalNote note(text);
        std::raise(SIGSEGV);
      },
      report_and_exit);
  CHECK(raised.exit_code == 3);
  CHECK(raised.stderr_text ==
        "csrun: SIGSEGV (invalid memory access): while libhdf5 read 'a.h5'\n"
        "the previous handler's report\n");
  Ending fault = run_child(
      [] {
        std::string text = "while libhdf5 read 'b.h5'";
        FatalSignalNote note(text);
        volatile int* nowhere = nullptr;
        *nowhere = 1;
      },
      report_and_exit);
  CHECK(fault.exit_code == 3);
  CHECK(fault.stderr_text ==
        "csrun: SIGSEGV (invalid memory access): while libhdf5 read 'b.h5'\n"
        "the previous handler's report\n");
}

TEST_CASE("a fatal signal outside any note prints nothing of csrun's") {
  Ending ending = run_child([] { std::raise(SIGSEGV); });
  CHECK(ending.signal == SIGSEGV);
  CHECK(ending.stderr_text.empty());
}

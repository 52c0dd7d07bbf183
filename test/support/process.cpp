#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <stdexcept>
#include <string_view>

namespace csrun::test {

namespace {

void drain(int fd, std::string& into, bool& open) {
  char buffer[4096];
  ssize_t n = read(fd, buffer, sizeof buffer);
  if (n > 0) {
    into.append(buffer, static_cast<std::size_t>(n));
  } else {
    open = false;
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& arguments, const std::string& directory,
                          int timeout_seconds) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (chdir(directory.c_str()) != 0) _exit(127);
    std::vector<char*> argv;
    for (const std::string& argument : arguments)
      argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult result;
  bool out_open = true;
  bool err_open = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  bool timed_out = false;
  while (out_open || err_open) {
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int ready = poll(fds, 2, 100);
    if (ready > 0) {
      if (out_open && (fds[0].revents & (POLLIN | POLLHUP)))
        drain(out_pipe[0], result.out, out_open);
      if (err_open && (fds[1].revents & (POLLIN | POLLHUP)))
        drain(err_pipe[0], result.err, err_open);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      timed_out = true;
      break;
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  result.peak_rss_kib = usage.ru_maxrss;
  if (timed_out) {
    result.exit_code = 124;
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

ProcessResult run_csrun(const std::vector<std::string>& arguments, const std::string& directory) {
  std::vector<std::string> command = {CSRUN_BINARY};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return run_process(command, directory);
}

std::optional<std::string> error_under_file_size_limit(std::uint64_t bytes,
                                                       const std::function<void()>& work) {
  int channel[2];
  if (::pipe(channel) != 0) throw std::runtime_error("cannot create a pipe");
  pid_t child = ::fork();
  if (child == 0) {
    ::close(channel[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{bytes, bytes};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      work();
    } catch (const std::exception& error) {
      std::string_view message = error.what();
      ssize_t written = ::write(channel[1], message.data(), message.size());
      ::_exit(written == static_cast<ssize_t>(message.size()) ? 0 : 2);
    }
    ::_exit(1);
  }
  ::close(channel[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t got; (got = ::read(channel[0], buffer, sizeof buffer)) > 0;)
    message.append(buffer, static_cast<std::size_t>(got));
  ::close(channel[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 2)
    throw std::runtime_error("the child under a file-size limit did not end normally");
  if (WEXITSTATUS(status) == 1) return std::nullopt;
  return message;
}

}  // namespace csrun::test

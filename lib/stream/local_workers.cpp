#include "local_workers.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace csrun::stream {

namespace {

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "status " + std::to_string(status);
}

}  // namespace

LocalWorkers::LocalWorkers(std::string executable, std::string address, std::string secret)
    : executable_(std::move(executable)),
      address_(std::move(address)),
      secret_(std::move(secret)) {}

LocalWorkers::~LocalWorkers() {
  kill_all();
}

void LocalWorkers::kill_all() {
  for (const auto& [pid, rank] : children_) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  children_.clear();
}

pid_t LocalWorkers::spawn(std::int64_t rank) {
  // Everything the child needs is built before fork: after it only exec-safe calls run.
  std::string rank_text = std::to_string(rank);
  std::vector<std::string> arguments = {executable_, "worker", "--connect",
                                        address_,    "--rank", rank_text};
  std::vector<char*> argv;
  for (std::string& argument : arguments)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment = {"CSRUN_STREAM_SECRET=" + secret_};
  for (char** variable = environ; *variable; ++variable)
    if (std::strncmp(*variable, "CSRUN_STREAM_SECRET=", 20) != 0)
      environment.emplace_back(*variable);
  std::vector<char*> envp;
  for (std::string& variable : environment)
    envp.push_back(variable.data());
  envp.push_back(nullptr);
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("cannot start a data worker: fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    // A scheduler's SIGTERM reaches every process of the job: the coordinator still needs its
    // workers to finish the step it checkpoints. They end with it.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGTERM, &ignore, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  children_[pid] = rank;
  return pid;
}

void LocalWorkers::kill(pid_t pid) {
  if (children_.contains(pid)) ::kill(pid, SIGKILL);
}

std::vector<LocalWorkers::Exit> LocalWorkers::reap() {
  std::vector<Exit> exits;
  for (auto it = children_.begin(); it != children_.end();) {
    int status = 0;
    if (::waitpid(it->first, &status, WNOHANG) == it->first) {
      exits.push_back({it->first, it->second, describe_status(status)});
      it = children_.erase(it);
    } else {
      ++it;
    }
  }
  return exits;
}

void LocalWorkers::finish(int milliseconds) {
  for (int waited = 0; !children_.empty() && waited < milliseconds; waited += 10) {
    reap();
    if (!children_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill_all();
}

}  // namespace csrun::stream

#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace csrun::stream {

// Data workers as child processes: `EXECUTABLE worker --connect ADDRESS --rank N`, the secret in
// CSRUN_STREAM_SECRET. Children get their own process group (Ctrl-C in a terminal reaches
// only the coordinator, which stops them), ignore SIGTERM (a scheduler's reaches the whole job,
// and the coordinator needs them to finish its last step) and die with this process
// (PR_SET_PDEATHSIG), so a coordinator that is killed leaves no orphans.
class LocalWorkers {
 public:
  LocalWorkers(std::string executable, std::string address, std::string secret);
  ~LocalWorkers();  // kills the children still running and reaps them
  LocalWorkers(const LocalWorkers&) = delete;
  LocalWorkers& operator=(const LocalWorkers&) = delete;

  pid_t spawn(std::int64_t rank);
  void kill(pid_t pid);

  struct Exit {
    pid_t pid;
    std::int64_t rank;
    std::string status;  // "exit status 1", "signal 9 (Killed)"
  };
  // The children that have ended since the last call.
  std::vector<Exit> reap();
  // Waits up to `milliseconds` for every child to end, then kills the rest.
  void finish(int milliseconds);

 private:
  void kill_all();

  std::string executable_;
  std::string address_;
  std::string secret_;
  std::map<pid_t, std::int64_t> children_;
};

}  // namespace csrun::stream

#include "process_liveness.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace csrun::storage {

std::optional<int> parse_pid(std::string_view text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != text.npos)
    return std::nullopt;
  int pid = 0;
  for (char digit : text)
    pid = pid * 10 + (digit - '0');
  return pid;
}

bool process_alive(int pid) {
  return pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace csrun::storage

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include "storage/process_liveness.hpp"

using namespace csrun::storage;

TEST_CASE("a pid in a file name is decimal digits, at most nine") {
  CHECK(parse_pid("4242") == 4242);
  CHECK(parse_pid("0") == 0);
  CHECK_FALSE(parse_pid(""));
  CHECK_FALSE(parse_pid("12a"));
  CHECK_FALSE(parse_pid("-1"));
  CHECK_FALSE(parse_pid("1234567890"));
}

TEST_CASE("a process is alive until it has exited and been reaped") {
  CHECK(process_alive(::getpid()));
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_FALSE(process_alive(child));
}

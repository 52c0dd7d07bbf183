#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "storage/atomic_file.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using namespace csrun::storage;
using csrun::test::read_file;
namespace fs = std::filesystem;

namespace {

std::size_t entries(const fs::path& directory) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(directory), fs::directory_iterator()));
}

// A process that no longer exists: a child that has exited and been reaped.
pid_t dead_pid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

std::string host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

TEST_CASE("an atomic write replaces the file and leaves nothing else") {
  csrun::test::TempDir dir;
  fs::path path = dir.path() / "state.bin";
  write_file_atomically(path, "first");
  write_file_atomically(path, std::string(100000, 'x'));
  CHECK(read_file(path) == std::string(100000, 'x'));
  CHECK(entries(dir.path()) == 1);
}

TEST_CASE("a failed atomic write names the file and the reason and keeps the old file") {
  csrun::test::TempDir dir;
  CHECK_THROWS_WITH(write_file_atomically(dir.path() / "missing" / "f", "x"),
                    Catch::Contains("missing/f: ") && Catch::Contains("No such file or directory"));

  // A file-size limit fails the write as a full disk does.
  fs::path path = dir.path() / "checkpoint.mdl";
  write_file_atomically(path, "old contents");
  auto message = csrun::test::error_under_file_size_limit(
      4096, [&] { write_file_atomically(path, std::string(1 << 20, 'n')); });
  REQUIRE(message);
  CHECK_THAT(*message, Catch::Contains("cannot write " + path.string() + ": File too large"));
  CHECK(read_file(path) == "old contents");
  CHECK(entries(dir.path()) == 1);
}

TEST_CASE("temporary files of killed writers on this host are removed, others kept") {
  csrun::test::TempDir dir;
  std::string dead = std::to_string(dead_pid());
  std::string alive = std::to_string(::getpid());
  dir.write("checkpoint_4.mdl.tmp." + host() + "." + dead, "half");
  dir.write("checkpoint_5.mdl.tmp." + dead, "half, an older csrun's name");
  dir.write("checkpoint_6.mdl.tmp." + host() + "." + alive, "in progress");
  dir.write("checkpoint_7.mdl.tmp.another-host.example." + dead, "another host's");
  dir.write("plan.bin.tmp." + dead, "another kind of file");
  dir.write("notes.mdl.tmp.text", "not a temporary file");
  auto removed = remove_stale_temporaries(dir.path(), ".mdl");
  REQUIRE(removed.size() == 2);
  CHECK_FALSE(fs::exists(dir.path() / ("checkpoint_4.mdl.tmp." + host() + "." + dead)));
  CHECK_FALSE(fs::exists(dir.path() / ("checkpoint_5.mdl.tmp." + dead)));
  CHECK(entries(dir.path()) == 4);
}

TEST_CASE("an atomic file appears whole when committed and not at all when dropped") {
  csrun::test::TempDir dir;
  fs::path path = dir.path() / "checkpoint.mdl";
  write_file_atomically(path, "old contents");
  {
    AtomicFile dropped(path);
    std::ofstream(dropped.temporary()) << "half of a new file";
  }
  CHECK(read_file(path) == "old contents");
  CHECK(entries(dir.path()) == 1);

  AtomicFile file(path);
  std::ofstream(file.temporary()) << "new contents";
  file.reserve(std::uint64_t{64} << 20);
  file.commit();
  CHECK(read_file(path) == "new contents");
  CHECK(entries(dir.path()) == 1);
  // The reserved blocks beyond what was written are given back.
  struct stat written {};
  REQUIRE(::stat(path.c_str(), &written) == 0);
  CHECK(written.st_blocks * 512 < (1 << 20));
}

TEST_CASE("a reservation beyond the file-size limit fails before anything is written") {
  csrun::test::TempDir dir;
  fs::path path = dir.path() / "checkpoint.mdl";
  auto message = csrun::test::error_under_file_size_limit(4096, [&] {
    AtomicFile file(path);
    std::ofstream(file.temporary()) << "";
    file.reserve(1 << 20);
  });
  REQUIRE(message);
  CHECK_THAT(*message, Catch::Contains("cannot write " + path.string() +
                                       ": File too large (1048576 bytes;") &&
                           Catch::Contains("at most 4096 bytes: ulimit -f)"));
  CHECK(entries(dir.path()) == 0);
}

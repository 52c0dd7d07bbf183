#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "data/hdf5_file.hpp"
#include "support/temp_dir.hpp"

namespace data = csrun::data;

TEST_CASE("an HDF5 file written from spans reads back as it was written") {
  csrun::test::TempDir dir;
  std::string path = (dir.path() / "state.h5").string();
  std::vector<float> floats = {0.5f, -1.25f, 3.0f, 4.0f, 5.5f, -6.0f};
  std::vector<std::int32_t> integers = {7, -8};
  {
    data::Hdf5Writer writer(path);
    writer.write("weights", {2, 3}, floats);
    writer.write("counters", {2}, integers);
    writer.close();
  }
  data::Hdf5File file(path);
  REQUIRE(file.is_open());
  CHECK(file.dataset("weights")->dims == std::vector<std::uint64_t>{2, 3});
  CHECK(file.read_floats("weights") == floats);
  CHECK(file.read_int32("counters") == integers);
  CHECK(file.read_floats("counters") == std::vector<float>{7.0f, -8.0f});
}

// HDF5 1.10 crashed at exit after a file's closing writes failed (the identifier survived a
// failed H5Fclose): the failure is checked in a child that then exits normally, running
// HDF5's shutdown.
TEST_CASE("an HDF5 file on a full disk says why and is given up without a crash at exit") {
  csrun::test::TempDir dir;
  std::string message_file = (dir.path() / "message").string();
  pid_t child = ::fork();
  if (child == 0) {
    std::vector<float> values(std::size_t{1} << 20, 1.0f);
    try {
      // /dev/full fails every write with ENOSPC, as a full disk does.
      data::Hdf5Writer writer("/dev/full", "checkpoint_9.mdl");
      writer.write("model.w", {values.size()}, values);
      writer.close();
    } catch (const std::exception& error) {
      std::ofstream(message_file) << error.what();
      std::exit(0);
    }
    std::exit(3);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::ifstream message(message_file);
  std::string text{std::istreambuf_iterator<char>(message), std::istreambuf_iterator<char>()};
  CHECK_THAT(text, Catch::Contains("checkpoint_9.mdl: No space left on device"));
}

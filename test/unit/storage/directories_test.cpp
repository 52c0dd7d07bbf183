#include <catch2/catch.hpp>

#include <filesystem>

#include "storage/directories.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using csrun::storage::make_directories;

TEST_CASE("a directory that cannot be made names the file in its way") {
  csrun::test::TempDir dir;
  make_directories(dir.path() / "run" / "events");
  CHECK(fs::is_directory(dir.path() / "run" / "events"));
  make_directories(dir.path() / "run" / "events");  // there already: nothing to do

  dir.write("run/compile", "");
  std::string in_the_way = (dir.path() / "run" / "compile").string();
  CHECK_THROWS_WITH(make_directories(dir.path() / "run" / "compile" / "plan"),
                    "cannot create the directory '" + in_the_way + "/plan': '" + in_the_way +
                        "' is a file, not a directory");
  CHECK_THROWS_WITH(make_directories(in_the_way), Catch::Contains("' is a file, not a directory"));
}

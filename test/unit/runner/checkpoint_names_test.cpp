#include <catch2/catch.hpp>

#include "runner/checkpoint_names.hpp"
#include "support/temp_dir.hpp"

using csrun::runner::CheckpointNames;

namespace {

std::vector<std::string> found_names(const CheckpointNames& names,
                                     const std::filesystem::path& directory) {
  std::vector<std::string> files;
  for (const CheckpointNames::Found& found : names.find(directory))
    files.push_back(std::filesystem::path(found.path).filename().string());
  return files;
}

}  // namespace

TEST_CASE("checkpoints are found by step, stamped duplicates last") {
  csrun::test::TempDir dir;
  for (const char* name :
       {"checkpoint_20.mdl", "checkpoint_3.mdl", "checkpoint_20_20261122_101010.mdl", "other.mdl",
        "checkpoint_x.mdl", "checkpoint_99999999999999999999999.mdl", "checkpoint_.mdl",
        "checkpoint_20_2026.mdl", "xcheckpoint_4.mdl"})
    dir.write(name, "");
  auto found = CheckpointNames().find(dir.path());
  REQUIRE(found.size() == 3);
  CHECK(found[0].step == 3);
  CHECK(found[1].step == 20);
  CHECK(found[1].time_stamp.empty());
  CHECK(found[2].time_stamp == "20261122_101010");
  CHECK(found[2].path.ends_with("checkpoint_20_20261122_101010.mdl"));
}

TEST_CASE("checkpoint_name: a step's file, its time-stamped twin, and finding them again") {
  csrun::test::TempDir dir;
  CheckpointNames names("saved/{step}_weights.mdl");
  CHECK(names.file(dir.path(), 7) == dir.path() / "saved" / "7_weights.mdl");
  // As the Model Zoo does: the stamp follows the step, where {step} stands.
  CHECK(names.file(dir.path(), 7, "20261122_101010") ==
        dir.path() / "saved" / "7_20261122_101010_weights.mdl");
  CHECK(names.convention() == "saved/(step)(_timestamp)?_weights.mdl");
  CHECK(names.folder(dir.path()) == dir.path() / "saved");
  std::filesystem::create_directories(dir.path() / "saved");
  for (const char* name : {"saved/12_weights.mdl", "saved/7_20261122_101010_weights.mdl",
                           "saved/7_weights.mdl", "saved/checkpoint_9.mdl", "12_weights.mdl"})
    dir.write(name, "");
  CHECK(found_names(names, dir.path()) == std::vector<std::string>{"7_weights.mdl",
                                                                   "7_20261122_101010_weights.mdl",
                                                                   "12_weights.mdl"});
  CHECK(found_names(CheckpointNames(), dir.path() / "saved") ==
        std::vector<std::string>{"checkpoint_9.mdl"});
  CHECK(CheckpointNames("ck_{step}.mdl").find(dir.path() / "missing").empty());
}

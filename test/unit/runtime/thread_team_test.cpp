#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "runtime/thread_team.hpp"

using csrun::runtime::ThreadTeam;

TEST_CASE("a thread team runs every part once per call, the first on the caller") {
  for (int size : {1, 2, 4}) {
    INFO("team of " << size);
    ThreadTeam team(size);
    REQUIRE(team.size() == size);
    std::vector<std::atomic<int>> runs(static_cast<std::size_t>(size));
    std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> first_on_caller = true;
    for (int call = 0; call < 500; ++call) {
      auto work = [&](int part) {
        runs[static_cast<std::size_t>(part)].fetch_add(1);
        if (part == 0 && std::this_thread::get_id() != caller) first_on_caller = false;
      };
      team.run(work);
    }
    for (const std::atomic<int>& count : runs)
      CHECK(count.load() == 500);
    CHECK(first_on_caller);
  }
}

TEST_CASE("a thread team's run returns only after every part has finished") {
  ThreadTeam team(2);
  for (int call = 0; call < 200; ++call) {
    std::atomic<int> finished = 0;
    auto work = [&](int part) {
      if (part == 1) std::this_thread::yield();
      finished.fetch_add(1);
    };
    team.run(work);
    REQUIRE(finished.load() == 2);
  }
}

TEST_CASE("the process may run on at least one core") {
  CHECK(ThreadTeam::available_cores() >= 1);
}

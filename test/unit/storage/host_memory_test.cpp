#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "storage/host_memory.hpp"
#include "support/temp_dir.hpp"

using namespace csrun::storage;
namespace fs = std::filesystem;

namespace {

void write_limit(const fs::path& file, const std::string& value) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << value << "\n";
}

constexpr std::uint64_t kGiB = 1024ull * 1024 * 1024;

}  // namespace

TEST_CASE("a cgroup v2 memory.max caps the usable memory, the tightest of the cgroup's ancestors") {
  csrun::test::TempDir root;
  write_limit(root.path() / "slurm/memory.max", "max");
  write_limit(root.path() / "slurm/job_7/memory.max", std::to_string(24 * kGiB));
  write_limit(root.path() / "slurm/job_7/step_0/memory.max", "max");

  auto limit = cgroup_memory_limit("0::/slurm/job_7/step_0\n", root.path());
  REQUIRE(limit);
  CHECK(limit->bytes == 24 * kGiB);
  CHECK(limit->cgroup == "/slurm/job_7");

  write_limit(root.path() / "slurm/memory.max", std::to_string(8 * kGiB));
  limit = cgroup_memory_limit("0::/slurm/job_7/step_0\n", root.path());
  REQUIRE(limit);
  CHECK(limit->bytes == 8 * kGiB);
  CHECK(limit->cgroup == "/slurm");
}

TEST_CASE(
    "a cgroup v1 memory controller's limit_in_bytes caps it but its unlimited value does not") {
  csrun::test::TempDir root;
  std::string proc = "12:cpu,cpuacct:/job_3\n4:memory:/job_3\n1:name=systemd:/\n";
  write_limit(root.path() / "memory/job_3/memory.limit_in_bytes", std::to_string(3 * kGiB));
  write_limit(root.path() / "memory/memory.limit_in_bytes", "9223372036854771712");
  auto limit = cgroup_memory_limit(proc, root.path());
  REQUIRE(limit);
  CHECK(limit->bytes == 3 * kGiB);
  CHECK(limit->cgroup == "/job_3");

  write_limit(root.path() / "memory/job_3/memory.limit_in_bytes", "9223372036854771712");
  CHECK_FALSE(cgroup_memory_limit(proc, root.path()));
}

TEST_CASE("no cgroup limit: no files, \"max\", garbage or a malformed /proc/self/cgroup") {
  csrun::test::TempDir root;
  CHECK_FALSE(cgroup_memory_limit("0::/user.slice\n", root.path()));
  write_limit(root.path() / "user.slice/memory.max", "max");
  CHECK_FALSE(cgroup_memory_limit("0::/user.slice\n", root.path()));
  write_limit(root.path() / "user.slice/memory.max", "12abc");
  CHECK_FALSE(cgroup_memory_limit("0::/user.slice\n", root.path()));
  CHECK_FALSE(cgroup_memory_limit("", root.path()));
  CHECK_FALSE(cgroup_memory_limit("garbage\n0:\n::\n", root.path()));
}

TEST_CASE("the usable memory is at most the machine's and its text names where it comes from") {
  CHECK(usable_memory_bytes() > 0);
  std::string text = usable_memory_text();
  bool machine = text.rfind("this machine's ", 0) == 0;
  bool cgroup = text.find(" that cgroup /") != std::string::npos;
  CHECK((machine || cgroup));
  CHECK(text.find(" GiB") != std::string::npos);
  CHECK_FALSE(exceeds_usable_memory(1.0));
  CHECK(exceeds_usable_memory(static_cast<double>(usable_memory_bytes()) * 2.0));
}

TEST_CASE("memory sizes read in MiB below a GiB and in GiB above") {
  CHECK(memory_size(0.0) == "0.0 KiB");
  CHECK(memory_size(50.0 * 1024) == "50.0 KiB");
  CHECK(memory_size(1.5 * 1024 * 1024) == "1.5 MiB");
  CHECK(memory_size(1023.0 * 1024 * 1024) == "1023.0 MiB");
  CHECK(memory_size(24.0 * kGiB) == "24.0 GiB");
}

#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "stream/shared_slots.hpp"

using namespace csrun::stream;

namespace {

// The coordinator's side of slots this process created, as a coordinator maps a local worker's.
std::optional<SharedSlots> open_own(const SharedSlots& slots, std::uint64_t nonce,
                                    std::size_t least_bytes, std::string& why) {
  return SharedSlots::open(::getpid(), slots.fd(), nonce, least_bytes, why);
}

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

}  // namespace

TEST_CASE("what a worker writes into a slot the coordinator reads there") {
  SharedSlots worker = SharedSlots::create(3, 5000);
  CHECK(worker.count() == 3);
  CHECK(worker.slot_bytes() >= 5000);
  std::string why;
  std::optional<SharedSlots> coordinator = open_own(worker, worker.nonce(), 5000, why);
  REQUIRE(coordinator);
  CHECK(coordinator->count() == 3);
  CHECK(coordinator->fd() == -1);
  for (std::size_t index = 0; index < 3; ++index)
    std::memset(worker.slot(index).data(), static_cast<int>(index + 1), 5000);
  for (std::size_t index = 0; index < 3; ++index) {
    std::span<const std::byte> seen = std::as_const(*coordinator).slot(index);
    CHECK(seen[0] == std::byte(index + 1));
    CHECK(seen[4999] == std::byte(index + 1));
  }
}

TEST_CASE("memory that is not the worker's sealed batch slots is not mapped, and says why") {
  SharedSlots worker = SharedSlots::create(2, 100);
  std::string why;
  CHECK_FALSE(open_own(worker, worker.nonce() + 1, 100, why));
  CHECK_THAT(why, Catch::Contains("not the worker's batch memory"));
  CHECK_FALSE(open_own(worker, worker.nonce(), worker.slot_bytes() + 1, why));
  CHECK_THAT(why, Catch::Contains("do not fit"));
  CHECK_FALSE(SharedSlots::open(::getpid(), 1 << 20, worker.nonce(), 100, why));
  CHECK_THAT(why, Catch::Contains("cannot open /proc/"));
  CHECK_FALSE(SharedSlots::open(-1, worker.fd(), worker.nonce(), 100, why));

  // A memfd that could shrink under the coordinator's reads (SIGBUS) is refused.
  Fd unsealed{::memfd_create("unsealed", MFD_CLOEXEC)};
  REQUIRE(::ftruncate(unsealed.fd, 1 << 16) == 0);
  CHECK_FALSE(SharedSlots::open(::getpid(), unsealed.fd, worker.nonce(), 100, why));
  CHECK_THAT(why, Catch::Contains("not sealed shared memory"));
  int pipe_ends[2];
  REQUIRE(::pipe(pipe_ends) == 0);
  Fd read_end{pipe_ends[0]}, write_end{pipe_ends[1]};
  CHECK_FALSE(SharedSlots::open(::getpid(), read_end.fd, worker.nonce(), 100, why));
  CHECK_THAT(why, Catch::Contains("not sealed shared memory"));
}

TEST_CASE("a slot pool leases each slot once until its lease ends") {
  SharedSlots worker = SharedSlots::create(2, 64);
  std::string why;
  auto pool = std::make_shared<SlotPool>(*open_own(worker, worker.nonce(), 64, why));
  SlotPool::Lease first = SlotPool::lease(pool);
  SlotPool::Lease second = SlotPool::lease(pool);
  CHECK(first.index() >= 0);
  CHECK(second.index() >= 0);
  CHECK(first.index() != second.index());
  CHECK(SlotPool::lease(pool).index() == -1);  // all leased: the batch goes in its frame
  std::int64_t freed = first.index();
  first = {};
  CHECK(SlotPool::lease(pool).index() == freed);
  SlotPool::Lease moved = std::move(second);
  CHECK(moved.index() >= 0);
  CHECK(SlotPool::lease(nullptr).index() == -1);  // a worker without shared memory
}

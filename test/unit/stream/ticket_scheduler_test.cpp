// The coordinator's scheduling on its own: no sockets, no processes, every outcome determined.

#include <catch2/catch.hpp>

#include "stream/ticket_scheduler.hpp"

using csrun::stream::TicketScheduler;
using Delivery = TicketScheduler::Delivery;

namespace {

// Makes every assignment the scheduler offers; returns them in order, as "ticket:worker".
std::vector<std::string> assign_all(TicketScheduler& scheduler) {
  std::vector<std::string> made;
  while (auto next = scheduler.next_assignment()) {
    scheduler.assign(next->first, next->second);
    made.push_back(std::to_string(next->first) + ":" + next->second);
  }
  return made;
}

}  // namespace

TEST_CASE("tickets go in order to the least busy ready worker, within its credits") {
  TicketScheduler scheduler(1, 2);
  for (std::int64_t i = 0; i < 5; ++i)
    scheduler.issue(0, {0, i * 8});
  CHECK(assign_all(scheduler).empty());  // no worker yet
  scheduler.add_worker("a");
  scheduler.add_worker("b");
  CHECK(assign_all(scheduler) == std::vector<std::string>{"1:a", "2:b", "3:a", "4:b"});
  CHECK(scheduler.holding("a") == 2);
  CHECK(scheduler.ticket(5).worker.empty());  // both workers are at their credits
  CHECK(scheduler.deliver(2, "b") == Delivery::accepted);
  CHECK(assign_all(scheduler) == std::vector<std::string>{"5:b"});
}

TEST_CASE("the loop reads tickets in the order they were issued, once their batches came") {
  TicketScheduler scheduler(2, 4);
  scheduler.add_worker("a");
  std::uint64_t first = scheduler.issue(1, {0, 0});
  std::uint64_t second = scheduler.issue(1, {0, 4});
  scheduler.issue(0, {2, 0});
  assign_all(scheduler);
  CHECK(scheduler.front(1) == first);
  CHECK(scheduler.deliver(second, "a") == Delivery::accepted);
  CHECK_THROWS_AS(scheduler.pop_front(1), std::logic_error);  // the first has not come
  CHECK(scheduler.deliver(first, "a") == Delivery::accepted);
  CHECK(scheduler.ticket(first).at == csrun::data::BatchPosition{0, 0});
  scheduler.pop_front(1);
  CHECK(scheduler.front(1) == second);
  CHECK(scheduler.queued(0) == 1);
}

TEST_CASE("a dropped worker's batches go to the others, delivered ones stay") {
  TicketScheduler scheduler(1, 3);
  scheduler.add_worker("a");
  for (std::int64_t i = 0; i < 3; ++i)
    scheduler.issue(0, {0, i});
  assign_all(scheduler);
  CHECK(scheduler.deliver(1, "a") == Delivery::accepted);
  TicketScheduler::Dropped dropped = scheduler.drop_worker("a");
  CHECK(dropped.reassigned == std::vector<std::uint64_t>{2, 3});
  CHECK(dropped.forgotten.empty());
  CHECK(scheduler.held_by(2, "a") == nullptr);
  scheduler.add_worker("b");
  CHECK(assign_all(scheduler) == std::vector<std::string>{"2:b", "3:b"});
  CHECK(scheduler.front(0) == 1);  // delivered before the drop: still read first
  CHECK(scheduler.drop_worker("nobody").reassigned.empty());
}

TEST_CASE("a seek forgets queued and delivered batches and discards those still at workers") {
  TicketScheduler scheduler(1, 1);
  scheduler.add_worker("a");
  scheduler.add_worker("b");
  for (std::int64_t i = 0; i < 3; ++i)
    scheduler.issue(0, {0, i});
  assign_all(scheduler);  // 1 at a, 2 at b, 3 unassigned
  CHECK(scheduler.deliver(1, "a") == Delivery::accepted);
  CHECK(scheduler.cancel_queue(0) == std::vector<std::uint64_t>{1, 3});
  CHECK(scheduler.queued(0) == 0);
  CHECK(scheduler.deliver(2, "b") == Delivery::discarded);
  std::uint64_t after = scheduler.issue(0, {1, 0});
  CHECK(assign_all(scheduler) == std::vector<std::string>{std::to_string(after) + ":a"});
  // A cancelled ticket at a dropped worker is forgotten, not reassigned.
  scheduler.issue(0, {1, 1});
  assign_all(scheduler);  // to b
  scheduler.cancel_queue(0);
  TicketScheduler::Dropped dropped = scheduler.drop_worker("b");
  CHECK(dropped.reassigned.empty());
  CHECK(dropped.forgotten.size() == 1);
}

TEST_CASE("a batch for a ticket a worker does not hold is unexpected") {
  TicketScheduler scheduler(1, 2);
  scheduler.add_worker("a");
  scheduler.add_worker("b");
  scheduler.issue(0, {0, 0});
  assign_all(scheduler);  // to a
  CHECK(scheduler.deliver(1, "b") == Delivery::unexpected);
  CHECK(scheduler.deliver(99, "a") == Delivery::unexpected);
  CHECK(scheduler.deliver(1, "a") == Delivery::accepted);
  CHECK(scheduler.deliver(1, "a") == Delivery::unexpected);  // sent twice
  CHECK_THROWS_AS(scheduler.assign(1, "b"), std::logic_error);
}

#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "data/batch_source.hpp"

namespace csrun::stream {

// Which worker produces which batch, without sockets: the coordinator's bookkeeping. A ticket is
// a batch position of a stream (a dataloader), queued in the order the loop reads them. Each
// unassigned ticket, lowest first, goes to the ready worker with a credit left that holds the
// fewest; a dropped worker's tickets go back to the pool; a seek cancels a stream's queue (a
// ticket already at a worker is marked cancelled and its batch discarded when it comes).
class TicketScheduler {
 public:
  struct Ticket {
    std::size_t stream = 0;
    data::BatchPosition at;
    std::string worker;  // empty while unassigned
    bool delivered = false;
    bool cancelled = false;
  };

  TicketScheduler(std::size_t streams, std::int64_t credits);

  // Queues a ticket for `at` at the end of stream `s`'s queue; returns its id.
  std::uint64_t issue(std::size_t s, data::BatchPosition at);
  std::size_t queued(std::size_t s) const { return queues_.at(s).size(); }
  // The ticket the loop reads next from stream `s` (its queue must not be empty), and its removal
  // once read.
  std::uint64_t front(std::size_t s) const { return queues_.at(s).front(); }
  void pop_front(std::size_t s);
  const Ticket& ticket(std::uint64_t id) const { return tickets_.at(id); }

  // A worker that can take requests.
  void add_worker(const std::string& worker);
  std::size_t holding(const std::string& worker) const;
  // The next request to make: the lowest unassigned ticket and the least busy ready worker with a
  // credit left (the first by name among equals); nothing when either is missing.
  std::optional<std::pair<std::uint64_t, std::string>> next_assignment() const;
  void assign(std::uint64_t id, const std::string& worker);
  // Takes a worker away: its undelivered tickets go back to the pool, cancelled ones are
  // forgotten.
  struct Dropped {
    std::vector<std::uint64_t> reassigned;
    std::vector<std::uint64_t> forgotten;
  };
  Dropped drop_worker(const std::string& worker);

  // Ticket `id` when `worker` holds it and has not delivered it; else null.
  const Ticket* held_by(std::uint64_t id, const std::string& worker) const;
  // A batch came for ticket `id` from `worker`.
  enum class Delivery {
    accepted,   // the loop will read it
    discarded,  // its ticket was cancelled by a seek
    unexpected  // no such ticket at that worker: the worker is confused or hostile
  };
  Delivery deliver(std::uint64_t id, const std::string& worker);

  // Empties stream `s`'s queue for a seek. Returns the tickets it forgot (their delivered batches
  // are to be discarded); those at workers stay, cancelled, until their batches come.
  std::vector<std::uint64_t> cancel_queue(std::size_t s);

 private:
  std::int64_t credits_;
  std::vector<std::deque<std::uint64_t>> queues_;
  std::map<std::uint64_t, Ticket> tickets_;
  std::set<std::uint64_t> unassigned_;
  std::map<std::string, std::set<std::uint64_t>> workers_;  // ready workers and what they hold
  std::uint64_t next_id_ = 1;
};

}  // namespace csrun::stream

#include "ticket_scheduler.hpp"

#include <stdexcept>

namespace csrun::stream {

TicketScheduler::TicketScheduler(std::size_t streams, std::int64_t credits)
    : credits_(credits), queues_(streams) {}

std::uint64_t TicketScheduler::issue(std::size_t s, data::BatchPosition at) {
  std::uint64_t id = next_id_++;
  tickets_[id] = Ticket{s, at, {}, false, false};
  queues_.at(s).push_back(id);
  unassigned_.insert(id);
  return id;
}

void TicketScheduler::pop_front(std::size_t s) {
  std::uint64_t id = queues_.at(s).front();
  if (!tickets_.at(id).delivered)
    throw std::logic_error("ticket " + std::to_string(id) + " is read before its batch came");
  tickets_.erase(id);
  queues_[s].pop_front();
}

void TicketScheduler::add_worker(const std::string& worker) {
  workers_.try_emplace(worker);
}

std::size_t TicketScheduler::holding(const std::string& worker) const {
  auto found = workers_.find(worker);
  return found == workers_.end() ? 0 : found->second.size();
}

std::optional<std::pair<std::uint64_t, std::string>> TicketScheduler::next_assignment() const {
  if (unassigned_.empty()) return std::nullopt;
  auto best = workers_.end();
  for (auto it = workers_.begin(); it != workers_.end(); ++it) {
    if (it->second.size() >= static_cast<std::size_t>(credits_)) continue;
    if (best == workers_.end() || it->second.size() < best->second.size()) best = it;
  }
  if (best == workers_.end()) return std::nullopt;
  return std::make_pair(*unassigned_.begin(), best->first);
}

void TicketScheduler::assign(std::uint64_t id, const std::string& worker) {
  if (unassigned_.erase(id) == 0 || !workers_.contains(worker))
    throw std::logic_error("ticket " + std::to_string(id) + " cannot go to " + worker);
  tickets_.at(id).worker = worker;
  workers_[worker].insert(id);
}

TicketScheduler::Dropped TicketScheduler::drop_worker(const std::string& worker) {
  Dropped dropped;
  auto found = workers_.find(worker);
  if (found == workers_.end()) return dropped;
  for (std::uint64_t id : found->second) {
    Ticket& ticket = tickets_.at(id);
    if (ticket.cancelled) {
      tickets_.erase(id);
      dropped.forgotten.push_back(id);
      continue;
    }
    ticket.worker.clear();
    unassigned_.insert(id);
    dropped.reassigned.push_back(id);
  }
  workers_.erase(found);
  return dropped;
}

const TicketScheduler::Ticket* TicketScheduler::held_by(std::uint64_t id,
                                                        const std::string& worker) const {
  auto found = tickets_.find(id);
  if (found == tickets_.end() || found->second.worker != worker || found->second.delivered)
    return nullptr;
  return &found->second;
}

TicketScheduler::Delivery TicketScheduler::deliver(std::uint64_t id, const std::string& worker) {
  if (!held_by(id, worker)) return Delivery::unexpected;
  auto found = tickets_.find(id);
  workers_.at(worker).erase(id);
  if (found->second.cancelled) {
    tickets_.erase(found);
    return Delivery::discarded;
  }
  found->second.delivered = true;
  return Delivery::accepted;
}

std::vector<std::uint64_t> TicketScheduler::cancel_queue(std::size_t s) {
  std::vector<std::uint64_t> forgotten;
  for (std::uint64_t id : queues_.at(s)) {
    Ticket& ticket = tickets_.at(id);
    if (unassigned_.erase(id) > 0 || ticket.delivered) {
      tickets_.erase(id);
      forgotten.push_back(id);
    } else {
      ticket.cancelled = true;
    }
  }
  queues_[s].clear();
  return forgotten;
}

}  // namespace csrun::stream

#include "coordinator.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <zmq.hpp>

#include "data/sample_ledger.hpp"
#include "frame.hpp"
#include "frame_memory.hpp"
#include "local_workers.hpp"
#include "shared_slots.hpp"
#include "socket_calls.hpp"
#include "ticket_scheduler.hpp"

namespace csrun::stream {

namespace {

using Clock = std::chrono::steady_clock;

// A tcp endpoint as workers on other nodes reach it: a host name instead of 0.0.0.0.
std::string reachable(const std::string& endpoint, std::string host) {
  const std::string any = "tcp://0.0.0.0:";
  if (!endpoint.starts_with(any)) return endpoint;
  if (host.empty()) {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return endpoint;
    host = name;
  }
  return "tcp://" + host + ":" + endpoint.substr(any.size());
}

std::string peer_address(zmq::message_t& frame) {
  try {
    return frame.gets("Peer-Address");
  } catch (const zmq::error_t&) {
    return "a local peer";
  }
}

// Workers started elsewhere (by hand, by another launcher) read the relative paths of the
// params from this process's directory, as this process and its local children do.
std::vector<data::LoaderJob> read_from_here(std::vector<data::LoaderJob> jobs) {
  for (data::LoaderJob& job : jobs)
    if (job.directory.empty()) job.directory = std::filesystem::current_path().string();
  return jobs;
}

std::string worker_name(std::int64_t rank, std::int64_t pid) {
  return "data worker " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
}

bool same_secret(const std::string& given, const std::string& expected) {
  if (given.size() != expected.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < given.size(); ++i)
    difference |= static_cast<unsigned char>(given[i] ^ expected[i]);
  return difference == 0;
}

}  // namespace

struct Coordinator::State {
  struct Worker {
    std::int64_t rank = -1;
    std::int64_t pid = 0;
    bool ready = false;
    Clock::time_point last_heard;
    std::shared_ptr<SlotPool> slots;  // its shared memory, when it is on this host
    std::string name() const { return worker_name(rank, pid); }
  };
  struct Arrival {
    zmq::message_t frame;
    SlotPool::Lease slot;
    std::string producer;
  };
  struct Stream {
    data::LoaderJob job;
    std::optional<data::BatchCursor> cursor;
    std::int64_t samples = -1;
    std::int64_t remaining = 0;
    // The batch the loop reads: a view into its slot or its frame, or into `realigned`, a copy of
    // its bytes, when ZeroMQ placed them at an address its values cannot be read from.
    zmq::message_t frame;
    SlotPool::Lease slot;
    std::vector<std::byte> realigned;
    data::BatchView view;
  };

  CoordinatorOptions options;
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::router};
  std::string address;
  std::string jobs_text;
  std::vector<Stream> streams;
  std::map<std::string, Worker> workers;  // by ZeroMQ identity
  std::set<std::string> dropped;
  TicketScheduler scheduler;
  // Where a worker writes a requested batch, by ticket; none: in the frame.
  std::map<std::uint64_t, SlotPool::Lease> leases;
  std::map<std::uint64_t, Arrival> arrived;
  std::int64_t next_rank = 0;  // for workers started without a rank
  static constexpr std::int64_t kRejectionsShown = 10;
  std::int64_t rejections = 0;
  std::int64_t next_rejection_report = 100;
  std::optional<LocalWorkers> children;
  std::map<std::int64_t, int> failures_in_a_row;  // by local rank
  Clock::time_point alone_since = Clock::now();
  bool joined = false;  // a worker has been ready at some time
  // The log of the loop whose batches are open (Coordinator::batches), and how many are.
  std::function<void(const std::string&)> loop_log;
  int loop_log_users = 0;

  State(std::vector<data::LoaderJob> jobs, CoordinatorOptions coordinator_options)
      : options(std::move(coordinator_options)),
        jobs_text(data::encode_loader_jobs(read_from_here(jobs))),
        scheduler(jobs.size(), options.credits) {
    for (const data::LoaderJob& job : jobs)
      streams.emplace_back().job = job;
    socket.set(zmq::sockopt::router_mandatory, 1);
    // No frame is larger than the largest batch with its header: a peer that sends more is cut
    // off by ZeroMQ before it is buffered.
    socket.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(largest_frame()));
    socket.set(zmq::sockopt::sndhwm, 0);
    socket.set(zmq::sockopt::rcvhwm, 0);
    socket.set(zmq::sockopt::linger, 0);
    try {
      socket.bind(options.bind);
    } catch (const zmq::error_t& error) {
      throw std::runtime_error("the data coordinator cannot listen on " + options.bind + ": " +
                               error.what());
    }
    address = reachable(socket.get(zmq::sockopt::last_endpoint), options.host);
    if (options.local_workers > 0) {
      children.emplace(options.executable, address, options.secret);
      for (std::int64_t rank = 0; rank < options.local_workers; ++rank)
        children->spawn(options.first_worker_rank + rank);
    }
  }

  std::size_t largest_frame() const {
    std::size_t largest = jobs_text.size();
    for (const Stream& stream : streams) {
      auto indices = static_cast<std::size_t>(stream.job.rows()) * sizeof(std::int64_t);
      largest = std::max(largest, batch_bytes(stream) + indices);
    }
    return largest + (1u << 16);
  }

  ~State() {
    if (rejections > kRejectionsShown)
      log(std::to_string(rejections) + " frames were rejected in all");
    Message bye = make_message(MessageType::bye);
    bye.rank = options.more_follow ? 1 : 0;
    for (const auto& [identity, worker] : workers)
      send(identity, bye);
    socket.set(zmq::sockopt::linger, 2000);
    if (children) children->finish(2000);
  }

  // Hostile or confused peers can send rejected frames without end: the first few are logged
  // in full, then only a running count at each power of ten and the total at the end.
  void log_rejection(const std::string& text) {
    ++rejections;
    if (rejections <= kRejectionsShown) {
      log(text);
      if (rejections == kRejectionsShown)
        log("further rejected frames are counted, not logged one by one");
      return;
    }
    if (rejections % next_rejection_report == 0) {
      log(std::to_string(rejections) + " frames rejected so far");
      next_rejection_report *= 10;
    }
  }

  void log(const std::string& text) const {
    if (loop_log) {
      loop_log(text);
    } else if (options.log) {
      options.log(text);
    }
  }

  bool send(const std::string& identity, const Message& message) {
    std::vector<std::byte> bytes = encode(message);
    try {
      stream::send(socket, zmq::buffer(identity), zmq::send_flags::sndmore);
      stream::send(socket, zmq::buffer(bytes));
      return true;
    } catch (const zmq::error_t&) {
      return false;  // the peer is gone (router_mandatory)
    }
  }

  void reject(const std::string& identity, const std::string& reason) {
    Message message = make_message(MessageType::reject);
    message.text = reason;
    send(identity, message);
  }

  // Gives a worker's unfinished batches back to the pool.
  void drop(const std::string& identity, const std::string& why) {
    auto found = workers.find(identity);
    if (found == workers.end()) return;
    Worker& worker = found->second;
    TicketScheduler::Dropped tickets = scheduler.drop_worker(identity);
    for (const std::vector<std::uint64_t>* ids : {&tickets.reassigned, &tickets.forgotten}) {
      for (std::uint64_t id : *ids)
        leases.erase(id);
    }
    std::size_t given_back = tickets.reassigned.size();
    log(worker.name() + " " + why + "; " + std::to_string(given_back) + " of its batches " +
        (given_back == 1 ? "goes" : "go") + " back to the pool for the next free worker");
    if (children && worker.pid) children->kill(static_cast<pid_t>(worker.pid));
    // `identity` may be the erased entry's own key (restart_ended_children passes it): record
    // it before the entry goes.
    dropped.insert(identity);
    workers.erase(found);
    if (workers.empty()) alone_since = Clock::now();
  }

  // ---- messages ----

  void pump(std::chrono::milliseconds wait) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (poll_sockets(&item, 1, wait) <= 0) return;
    for (;;) {
      zmq::message_t identity;
      if (!receive(socket, identity, zmq::recv_flags::dontwait)) return;
      zmq::message_t frame;
      (void)receive(socket, frame);
      bool extra = false;
      while (frame.more()) {
        zmq::message_t rest;
        (void)receive(socket, rest);
        extra = true;
        if (!rest.more()) break;
      }
      handle(identity.to_string(), std::move(frame), extra);
    }
  }

  void handle(const std::string& identity, zmq::message_t frame, bool extra_frames) {
    Message message;
    try {
      if (extra_frames) throw FrameError("more than one frame in a message");
      message = decode(std::span(static_cast<const std::byte*>(frame.data()), frame.size()));
    } catch (const FrameError& error) {
      log_rejection("rejected a malformed frame from " + peer_address(frame) + ": " + error.what());
      if (workers.contains(identity)) drop(identity, "sent a malformed frame");
      reject(identity, std::string("malformed frame: ") + error.what());
      return;
    }
    auto found = workers.find(identity);
    if (found == workers.end()) {
      if (dropped.contains(identity)) return;  // what a dropped worker still had in flight
      welcome(identity, message, frame);
      return;
    }
    Worker& worker = found->second;
    worker.last_heard = Clock::now();
    switch (message.type) {
      case MessageType::ready:
        return ready(identity, worker, message);
      case MessageType::batch:
        return arrive(identity, worker, message, std::move(frame));
      case MessageType::failure:
        throw std::runtime_error(worker.name() + " cannot produce batches: " + message.text);
      case MessageType::heartbeat:
        return;
      default:
        drop(identity, std::string("sent an unexpected ") + message_type_name(message.type));
        reject(identity, "unexpected message");
    }
  }

  void welcome(const std::string& identity, const Message& message, zmq::message_t& frame) {
    if (message.type != MessageType::hello) {
      log_rejection("rejected a " + std::string(message_type_name(message.type)) + " from " +
                    peer_address(frame) + ", which has not said hello");
      reject(identity, "say hello first");
      return;
    }
    if (!same_secret(message.text, options.secret)) {
      log_rejection("rejected a data worker from " + peer_address(frame) + " (pid " +
                    std::to_string(message.pid) + "): wrong secret");
      reject(identity, "wrong secret");
      return;
    }
    const Worker* holder = message.rank >= 0 ? holder_of(message.rank) : nullptr;
    std::int64_t rank = message.rank >= 0 && !holder ? message.rank : next_rank;
    next_rank = std::max(next_rank, rank + 1);
    Worker worker{rank, message.pid, false, Clock::now(), nullptr};
    if (holder) {
      log(worker.name() + " asked for rank " + std::to_string(message.rank) + ", which " +
          holder->name() + " has: it is numbered " + std::to_string(rank) +
          " in this run's log and ledger");
    }
    Message reply = make_message(MessageType::welcome);
    reply.text = jobs_text;
    reply.rank = rank;
    if (send(identity, reply)) workers.emplace(identity, worker);
  }

  const Worker* holder_of(std::int64_t rank) const {
    for (const auto& [identity, worker] : workers)
      if (worker.rank == rank) return &worker;
    return nullptr;
  }

  void ready(const std::string& identity, Worker& worker, const Message& message) {
    if (message.values.size() != streams.size()) {
      drop(identity, "reported " + std::to_string(message.values.size()) + " datasets, not " +
                         std::to_string(streams.size()));
      return;
    }
    for (std::size_t s = 0; s < streams.size(); ++s) {
      Stream& stream = streams[s];
      std::int64_t samples = message.values[s];
      if (stream.samples < 0) {
        stream.samples = samples;
        stream.cursor.emplace(samples, stream.job.batch_size);
      } else if (stream.samples != samples) {
        throw std::runtime_error(worker.name() + " sees " + std::to_string(samples) +
                                 " samples in the " + stream.job.loader.processor +
                                 " dataset where the others see " + std::to_string(stream.samples) +
                                 "; every worker must read the same files");
      }
    }
    worker.slots = shared_slots(worker, message);
    worker.ready = true;
    scheduler.add_worker(identity);
    joined = true;
  }

  std::shared_ptr<SlotPool> shared_slots(const Worker& worker, const Message& ready) const {
    if (ready.memfd < 0) {
      log(worker.name() +
          " sends its batches in frames: it offers no shared memory (it runs on "
          "another host, could not create the memory, or was started with "
          "CSRUN_STREAM_SHARED_MEMORY=0)");
      return nullptr;
    }
    std::size_t largest = 0;
    for (const Stream& stream : streams)
      largest = std::max(largest, batch_bytes(stream));
    std::string why;
    std::optional<SharedSlots> slots =
        SharedSlots::open(worker.pid, ready.memfd, ready.nonce, largest, why);
    if (!slots) {
      log(worker.name() + " sends its batches in frames: its shared memory is not reachable (" +
          why + ")");
      return nullptr;
    }
    return std::make_shared<SlotPool>(std::move(*slots));
  }

  void arrive(const std::string& identity, Worker& worker, const Message& message,
              zmq::message_t frame) {
    const TicketScheduler::Ticket* ticket = scheduler.held_by(message.ticket, identity);
    if (!ticket) {
      drop(identity, "sent a batch it was not asked for");
      return;
    }
    const Stream& stream = streams[ticket->stream];
    SlotPool::Lease& slot = leases[message.ticket];
    std::size_t payload = slot.index() >= 0 ? 0 : batch_bytes(stream);
    if (message.slot != slot.index() ||
        message.values.size() != static_cast<std::size_t>(stream.job.rows()) ||
        message.payload.size() != payload) {
      drop(identity, "sent a batch of the wrong size or in the wrong slot");
      return;
    }
    if (worker.rank >= 0) failures_in_a_row[worker.rank] = 0;
    SlotPool::Lease lease = std::move(leases.extract(message.ticket).mapped());
    if (scheduler.deliver(message.ticket, identity) == TicketScheduler::Delivery::discarded) return;
    arrived.emplace(message.ticket, Arrival{std::move(frame), std::move(lease),
                                            "worker " + std::to_string(worker.rank)});
  }

  // ---- workers ----

  bool stopping() const { return options.stop_requested && options.stop_requested->load(); }

  void supervise() {
    if (!joined && stopping()) {
      throw std::runtime_error(
          "stopped on request (SIGTERM or SIGINT) while waiting for the "
          "first data worker; nothing was read or trained");
    }
    if (children) restart_ended_children();
    auto now = Clock::now();
    std::vector<std::string> silent;
    for (const auto& [identity, worker] : workers)
      if (now - worker.last_heard > options.worker_timeout) silent.push_back(identity);
    for (const std::string& identity : silent) {
      auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options.worker_timeout);
      drop(identity, "stopped answering for " + std::to_string(seconds.count()) + " s");
    }
    if (workers.empty() && now - alone_since > options.connect_timeout) {
      auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options.connect_timeout);
      std::string hint = !options.start_workers_hint.empty()
                             ? options.start_workers_hint
                             : "start workers with `csrun worker --connect " + address +
                                   "` (secret in CSRUN_STREAM_SECRET), or set "
                                   "num_workers_per_csx: 0 to read the data in this process";
      throw std::runtime_error("no data worker has been connected for " +
                               std::to_string(seconds.count()) + " s; " + hint);
    }
    // Waiting on for a replacement would outlast a scheduler's grace period (and lose the steps
    // since the last checkpoint); the loop checkpoints the steps it has taken instead.
    if (workers.empty() && stopping()) {
      throw data::StoppedWaiting(
          "stopped on request (SIGTERM or SIGINT) while waiting for a data worker to replace "
          "those that went away");
    }
  }

  void restart_ended_children() {
    for (const LocalWorkers::Exit& exit : children->reap()) {
      auto connected = std::find_if(workers.begin(), workers.end(), [&](const auto& entry) {
        return entry.second.pid == exit.pid;
      });
      // One that ended before it connected, or after it went away, is named here all the same.
      if (connected == workers.end()) {
        log(worker_name(exit.rank, exit.pid) + " ended (" + exit.status + ")");
      } else {
        drop(connected->first, "ended (" + exit.status + ")");
      }
      if (stopping()) continue;  // the run ends: a worker started now would serve nothing
      if (++failures_in_a_row[exit.rank] >= 3) {
        throw std::runtime_error("data worker " + std::to_string(exit.rank) +
                                 " ended 3 times in a row without producing a batch (last: " +
                                 exit.status + "); its messages are above");
      }
      log("restarting data worker " + std::to_string(exit.rank));
      children->spawn(exit.rank);
    }
  }

  bool has_ready_worker() const {
    for (const auto& [identity, worker] : workers)
      if (worker.ready) return true;
    return false;
  }

  // ---- tickets ----

  std::size_t lookahead() const {
    std::size_t count = std::max<std::size_t>(
        workers.size(), static_cast<std::size_t>(std::max<std::int64_t>(1, options.local_workers)));
    return count * static_cast<std::size_t>(options.credits);
  }

  void issue(std::size_t s) {
    Stream& stream = streams[s];
    while (stream.remaining > 0 && scheduler.queued(s) < lookahead()) {
      scheduler.issue(s, stream.cursor->take());
      --stream.remaining;
    }
  }

  // Requests every batch the scheduler can place now; a worker that went away is dropped and
  // its requests placed again.
  void dispatch() {
    while (auto assignment = scheduler.next_assignment()) {
      auto [id, identity] = *assignment;
      const TicketScheduler::Ticket& ticket = scheduler.ticket(id);
      Message request = make_message(MessageType::request);
      request.ticket = id;
      request.stream = static_cast<std::uint32_t>(ticket.stream);
      request.epoch = ticket.at.epoch;
      request.sample = ticket.at.sample;
      SlotPool::Lease slot = SlotPool::lease(workers.at(identity).slots);
      request.slot = slot.index();
      if (!send(identity, request)) {
        drop(identity, "went away");
        continue;
      }
      scheduler.assign(id, identity);
      leases[id] = std::move(slot);
    }
  }

  void step(std::chrono::milliseconds wait) {
    pump(wait);
    supervise();
    for (std::size_t s = 0; s < streams.size(); ++s)
      if (streams[s].cursor) issue(s);
    dispatch();
  }

  // ---- the loop's side ----

  void wait_until_ready() {
    while (!has_ready_worker() || streams.front().samples < 0)
      step(std::chrono::milliseconds(20));
  }

  void seek(std::size_t s, data::BatchPosition at, std::int64_t count) {
    wait_until_ready();
    Stream& stream = streams[s];
    for (std::uint64_t id : scheduler.cancel_queue(s))
      arrived.erase(id);
    stream.cursor->seek(at);
    stream.remaining = count;
    issue(s);
    dispatch();
  }

  const data::BatchView& next(std::size_t s) {
    wait_until_ready();
    Stream& stream = streams[s];
    if (scheduler.queued(s) == 0) {
      stream.remaining += 1;
      issue(s);
      dispatch();
    }
    std::uint64_t id = scheduler.front(s);
    while (!arrived.contains(id))
      step(std::chrono::milliseconds(50));
    Arrival arrival = std::move(arrived.extract(id).mapped());
    stream.frame = std::move(arrival.frame);
    stream.slot = std::move(arrival.slot);
    Message message =
        decode(std::span(static_cast<const std::byte*>(stream.frame.data()), stream.frame.size()));
    stream.view =
        view_of(stream.slot.index() >= 0 ? stream.slot.bytes(batch_bytes(stream)) : message.payload,
                stream);
    if (options.ledger) {
      data::BatchPosition at = scheduler.ticket(id).at;
      options.ledger->record(stream.job.loader.role, {at.epoch, at.sample + stream.job.first_row()},
                             message.values, arrival.producer);
    }
    scheduler.pop_front(s);
    issue(s);
    dispatch();
    return stream.view;
  }

  static std::size_t batch_bytes(const Stream& stream) {
    return data::batch_byte_size(stream.job.fields, stream.job.rows());
  }

  static data::BatchView view_of(std::span<const std::byte> payload, Stream& stream) {
    if (reinterpret_cast<std::uintptr_t>(payload.data()) % alignof(float) != 0) {
      stream.realigned.assign(payload.begin(), payload.end());
      payload = stream.realigned;
    }
    return data::BatchView(payload, stream.job.fields, stream.job.rows());
  }
};

namespace {

class StreamedBatches : public data::BatchSource {
 public:
  StreamedBatches(Coordinator::State& state, std::size_t stream,
                  std::function<void(const std::string&)> log)
      : state_(state), stream_(stream), logs_(static_cast<bool>(log)) {
    if (!logs_) return;
    state_.loop_log = std::move(log);
    ++state_.loop_log_users;
  }
  ~StreamedBatches() override {
    if (logs_ && --state_.loop_log_users == 0) state_.loop_log = nullptr;
  }
  StreamedBatches(const StreamedBatches&) = delete;
  StreamedBatches& operator=(const StreamedBatches&) = delete;

  std::int64_t samples() const override {
    state_.wait_until_ready();
    return state_.streams[stream_].samples;
  }
  void seek(data::BatchPosition at, std::int64_t count) override {
    state_.seek(stream_, at, count);
  }
  const data::BatchView& next() override { return state_.next(stream_); }

 private:
  Coordinator::State& state_;
  std::size_t stream_;
  bool logs_;
};

}  // namespace

Coordinator::Coordinator(std::vector<data::LoaderJob> jobs, CoordinatorOptions options) {
  keep_frame_memory();
  state_ = std::make_unique<State>(std::move(jobs), std::move(options));
}

Coordinator::~Coordinator() = default;

const std::string& Coordinator::address() const {
  return state_->address;
}

std::unique_ptr<data::BatchSource> Coordinator::batches(
    const data::LoaderJob& job, std::function<void(const std::string&)> log) {
  for (std::size_t s = 0; s < state_->streams.size(); ++s) {
    const data::LoaderJob& streamed = state_->streams[s].job;
    if (streamed.loader.role == job.loader.role && streamed.share == job.share &&
        streamed.shares == job.shares)
      return std::make_unique<StreamedBatches>(*state_, s, std::move(log));
  }
  throw std::logic_error("the coordinator streams no dataloader of this role and share");
}

}  // namespace csrun::stream

#include "worker.hpp"

#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <vector>
#include <zmq.hpp>

#include "data/batch_source.hpp"
#include "frame.hpp"
#include "frame_memory.hpp"
#include "rendezvous.hpp"
#include "shared_slots.hpp"
#include "socket_calls.hpp"

namespace csrun::stream {

namespace {

using Clock = std::chrono::steady_clock;

// Slots offered per worker: its credits' batches in flight plus those that wait for the loop,
// in at most kSharedBytes (the memory is reserved up front); the rest go in frames.
constexpr std::size_t kSharedSlots = 8;
constexpr std::size_t kSharedBytes = std::size_t{256} << 20;

struct Producer {
  data::BatchReader reader;
  data::BatchData batch;
  std::size_t batch_bytes;

  explicit Producer(const data::LoaderJob& job)
      : reader(job),
        batch(job.fields, job.rows()),
        batch_bytes(data::batch_byte_size(job.fields, job.rows())) {}
};

class Session {
 public:
  explicit Session(const WorkerOptions& options) : options_(options) {
    socket_.set(zmq::sockopt::linger, 1000);
    socket_.set(zmq::sockopt::sndhwm, 0);
    if (zmq_socket_monitor(socket_.handle(), "inproc://connection", ZMQ_EVENT_DISCONNECTED) != 0)
      throw std::runtime_error("cannot watch the connection to the coordinator");
    monitor_.connect("inproc://connection");
    try {
      socket_.connect(options_.address);
    } catch (const zmq::error_t& error) {
      throw std::runtime_error("cannot connect to the coordinator at " + options_.address + ": " +
                               error.what());
    }
  }

  WorkerEnd run() {
    Message hello = make_message(MessageType::hello);
    hello.text = options_.secret;
    hello.rank = options_.rank;
    hello.pid = static_cast<std::int64_t>(::getpid());
    send(hello);
    auto started = Clock::now();
    for (;;) {
      zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                                 {monitor_.handle(), 0, ZMQ_POLLIN, 0}};
      poll_sockets(items, 2, options_.heartbeat);
      if (items[1].revents & ZMQ_POLLIN) {
        zmq::message_t event;
        (void)stream::receive(monitor_, event);
        zmq::message_t endpoint;
        if (event.more()) (void)stream::receive(monitor_, endpoint);
        if (welcomed_) return WorkerEnd::coordinator_gone;
      }
      if (items[0].revents & ZMQ_POLLIN) {
        if (auto end = receive()) return *end;
        continue;
      }
      if (!welcomed_ && coordinator_finished()) return WorkerEnd::finished;
      if (!welcomed_ && Clock::now() - started > options_.connect_timeout) {
        throw std::runtime_error("no coordinator answered at " + options_.address + " within " +
                                 std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                    options_.connect_timeout)
                                                    .count()) +
                                 " s");
      }
      send(make_message(MessageType::heartbeat));
    }
  }

 private:
  bool coordinator_finished() const {
    if (options_.rendezvous_file.empty()) return false;
    std::optional<Rendezvous> rendezvous = read_rendezvous(options_.rendezvous_file);
    return rendezvous && rendezvous->finished;
  }

  std::optional<WorkerEnd> receive() {
    zmq::message_t frame;
    (void)stream::receive(socket_, frame);
    Message message;
    try {
      message = decode(std::span(static_cast<const std::byte*>(frame.data()), frame.size()));
    } catch (const FrameError& error) {
      throw std::runtime_error("a malformed frame from the coordinator at " + options_.address +
                               ": " + error.what());
    }
    switch (message.type) {
      case MessageType::welcome:
        if (options_.rank >= 0 && message.rank != options_.rank && options_.log) {
          options_.log("another worker of this run has rank " + std::to_string(options_.rank) +
                       ": this one is data worker " + std::to_string(message.rank));
        }
        open(message.text);
        return std::nullopt;
      case MessageType::request:
        produce(message);
        return std::nullopt;
      case MessageType::reject:
        throw std::runtime_error("the coordinator at " + options_.address +
                                 " rejected this worker: " + message.text);
      case MessageType::bye:
        return message.rank == 1 ? WorkerEnd::next_trainer : WorkerEnd::finished;
      default:
        throw std::runtime_error(std::string("the coordinator sent an unexpected ") +
                                 message_type_name(message.type));
    }
  }

  void open(const std::string& jobs_text) {
    welcomed_ = true;
    Message ready = make_message(MessageType::ready);
    try {
      std::vector<data::LoaderJob> jobs = data::decode_loader_jobs(jobs_text);
      if (!jobs.empty()) enter_directory(jobs.front().directory);
      for (const data::LoaderJob& job : jobs) {
        producers_.emplace_back(job);
        ready.values.push_back(producers_.back().reader.samples());
      }
    } catch (const std::exception& error) {
      fail(0, error.what());
    }
    if (options_.shared_memory) offer_shared_slots(ready);
    send(ready);
  }

  // Without the memory the batches go in frames: slower where the coordinator is on this host,
  // but the run goes on.
  void offer_shared_slots(Message& ready) {
    std::size_t largest = 0;
    for (const Producer& producer : producers_)
      largest = std::max(largest, producer.batch_bytes);
    try {
      std::size_t count = std::clamp<std::size_t>(kSharedBytes / std::max<std::size_t>(largest, 1),
                                                  1, kSharedSlots);
      slots_.emplace(SharedSlots::create(count, largest));
    } catch (const std::runtime_error& error) {
      if (options_.log) options_.log(std::string(error.what()) + "; batches go in frames");
      return;
    }
    ready.memfd = slots_->fd();
    ready.nonce = slots_->nonce();
  }

  void produce(const Message& request) {
    if (request.stream >= producers_.size()) fail(request.ticket, "no such stream");
    Producer& producer = producers_[request.stream];
    Message batch = make_message(MessageType::batch);
    batch.ticket = request.ticket;
    try {
      auto indices = producer.reader.read({request.epoch, request.sample}, producer.batch);
      batch.values.assign(indices.begin(), indices.end());
    } catch (const std::exception& error) {
      fail(request.ticket, error.what());
    }
    if (request.slot >= 0) {
      if (!slots_ || static_cast<std::size_t>(request.slot) >= slots_->count())
        fail(request.ticket, "no such shared batch slot");
      producer.batch.copy_to(
          slots_->slot(static_cast<std::size_t>(request.slot)).first(producer.batch_bytes));
      batch.slot = request.slot;
      send(batch);
      return;
    }
    // The batch goes straight into the frame's payload.
    batch.payload =
        std::span<const std::byte>(static_cast<const std::byte*>(nullptr), producer.batch_bytes);
    zmq::message_t frame(frame_size(batch));
    std::span<std::byte> bytes(static_cast<std::byte*>(frame.data()), frame.size());
    encode(batch, bytes);
    producer.batch.copy_to(bytes.subspan(payload_offset(batch)));
    stream::send(socket_, frame);
  }

  // The coordinator's directory, where the params' relative paths are read from; a host that
  // lacks it reads them from this worker's directory, which a failure then names.
  void enter_directory(const std::string& directory) {
    namespace fs = std::filesystem;
    std::error_code error;
    fs::path here = fs::current_path(error);
    if (directory.empty() || fs::equivalent(directory, here, error)) return;
    fs::current_path(directory, error);
    if (!error) {
      if (options_.log)
        options_.log("reading the params' relative paths from the coordinator's directory " +
                     directory);
      return;
    }
    elsewhere_ = "relative paths are read from this worker's directory " + here.string() +
                 ", since the coordinator's, " + directory + ", is not on this host";
  }

  [[noreturn]] void fail(std::uint64_t ticket, const std::string& reason) {
    std::string what = elsewhere_.empty() ? reason : reason + " (" + elsewhere_ + ")";
    Message failure = make_message(MessageType::failure);
    failure.text = what;
    failure.ticket = ticket;
    send(failure);
    throw std::runtime_error(what);
  }

  void send(const Message& message) {
    std::vector<std::byte> bytes = encode(message);
    stream::send(socket_, zmq::buffer(bytes));
  }

  const WorkerOptions& options_;
  zmq::context_t context_{1};
  zmq::socket_t socket_{context_, zmq::socket_type::dealer};
  zmq::socket_t monitor_{context_, zmq::socket_type::pair};
  bool welcomed_ = false;
  std::string elsewhere_;  // why relative paths are not read where the coordinator reads them
  std::vector<Producer> producers_;
  std::optional<SharedSlots> slots_;
};

}  // namespace

WorkerEnd run_worker(const WorkerOptions& options) {
  keep_frame_memory();
  Session session(options);
  return session.run();
}

}  // namespace csrun::stream

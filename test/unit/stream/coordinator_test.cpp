#include <catch2/catch.hpp>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <thread>
#include <zmq.hpp>

#include "data/sample_ledger.hpp"
#include "stream/coordinator.hpp"
#include "stream/frame.hpp"
#include "stream/shared_slots.hpp"
#include "stream/worker.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;
using namespace std::chrono_literals;

namespace {

const std::string kSecret = "0123456789abcdef";

data::LoaderJob fake_mnist_job(std::int64_t share = 0, std::int64_t shares = 1) {
  data::LoaderJob job;
  job.loader.processor = "MNISTDataProcessor";
  job.loader.fake = true;
  job.loader.batch_size = 8;
  job.fields = {{"input", false, 784, 0}, {"labels", true, 1, 10}};
  job.batch_size = 8;
  job.seed = 5;
  job.share = share;
  job.shares = shares;
  return job;
}

// A real data worker in a thread of its own, as `csrun worker` runs it.
struct WorkerThread {
  std::thread thread;
  explicit WorkerThread(const std::string& address, bool shared_memory = true,
                        std::int64_t rank = 0) {
    thread = std::thread([address, shared_memory, rank] {
      stream::WorkerOptions options;
      options.address = address;
      options.secret = kSecret;
      options.rank = rank;
      options.shared_memory = shared_memory;
      // Well inside the 1 s a test may give a silent worker, even on a loaded machine.
      options.heartbeat = std::chrono::milliseconds(100);
      stream::run_worker(options);
    });
  }
  ~WorkerThread() { thread.join(); }
};

// A raw peer that speaks the protocol (or not) as a test dictates.
struct Peer {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::dealer};
  // `connected_first`: sends wait until the connection is made, so that what this peer sends
  // reaches the coordinator before what a peer started later sends (the coordinator reads its
  // socket only while batches are taken; a loaded machine once connected this peer last).
  explicit Peer(const std::string& address, bool connected_first = false) {
    socket.set(zmq::sockopt::linger, 0);
    if (connected_first) socket.set(zmq::sockopt::immediate, 1);
    socket.connect(address);
  }
  void send(const std::vector<std::byte>& bytes) { socket.send(zmq::buffer(bytes)); }
  void send(const stream::Message& message) { send(stream::encode(message)); }
  std::optional<stream::Message> receive(std::chrono::milliseconds wait, zmq::message_t& frame) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, wait) <= 0) return std::nullopt;
    (void)socket.recv(frame);
    return stream::decode(std::span(static_cast<const std::byte*>(frame.data()), frame.size()));
  }
  // Says hello with the job's secret and reports the fake dataset, offering `slots` when given
  // (with their nonce + `wrong_nonce`): a worker that will then do whatever the test does.
  void join(const stream::SharedSlots* slots = nullptr, std::uint64_t wrong_nonce = 0) {
    send(hello(kSecret));
    stream::Message ready = stream::make_message(stream::MessageType::ready);
    ready.values = {1 << 16};
    if (slots) {
      ready.memfd = slots->fd();
      ready.nonce = slots->nonce() + wrong_nonce;
    }
    send(ready);
  }
  stream::Message hello(const std::string& secret) {
    stream::Message message = stream::make_message(stream::MessageType::hello);
    message.text = secret;
    message.pid = ::getpid();
    return message;
  }
  stream::Message next_request() {
    zmq::message_t frame;
    for (;;) {
      std::optional<stream::Message> message = receive(5s, frame);
      REQUIRE(message);
      if (message->type == stream::MessageType::request) return *message;
    }
  }
};

stream::CoordinatorOptions options_in(const test::TempDir& dir, std::vector<std::string>* log) {
  stream::CoordinatorOptions options;
  options.bind = "ipc://" + (dir.path() / "coordinator").string();
  options.secret = kSecret;
  options.connect_timeout = 20s;
  options.log = [log](const std::string& line) { log->push_back(line); };
  return options;
}

bool logged(const std::vector<std::string>& log, const std::string& text) {
  for (const std::string& line : log)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

// The streamed batches are the batches the loop would read itself.
void expect_in_process_batches(data::BatchSource& streamed, data::BatchPosition from, int count,
                               bool seek = true, const data::LoaderJob& job = fake_mnist_job()) {
  auto local = data::read_in_process(job);
  local->seek(from, count);
  if (seek) streamed.seek(from, count);
  for (int b = 0; b < count; ++b) {
    INFO("batch " << b);
    const data::BatchView& expected = local->next();
    const data::BatchView& got = streamed.next();
    REQUIRE(got.floats.size() == expected.floats.size());
    for (std::size_t f = 0; f < got.floats.size(); ++f) {
      CHECK(std::ranges::equal(got.floats[f], expected.floats[f]));
      CHECK(std::ranges::equal(got.integers[f], expected.integers[f]));
    }
  }
}

}  // namespace

TEST_CASE("a coordinator streams the in-process batches and rejects bad peers without stopping") {
  test::TempDir dir;
  std::vector<std::string> log;
  data::SampleLedger ledger((dir.path() / "ledger.tsv").string());
  stream::CoordinatorOptions options = options_in(dir, &log);
  options.ledger = &ledger;
  {
    std::optional<WorkerThread> worker;  // joined after the coordinator has said bye
    stream::Coordinator coordinator({fake_mnist_job()}, options);
    Peer intruder(coordinator.address(), true);
    zmq::message_t frame;
    intruder.send(std::vector<std::byte>(12, std::byte{0x41}));
    intruder.send(intruder.hello("not the secret"));
    intruder.send(stream::make_message(stream::MessageType::batch));
    worker.emplace(coordinator.address());
    auto batches = coordinator.batches(fake_mnist_job());
    CHECK(batches->samples() == 1 << 16);
    expect_in_process_batches(*batches, {0, 0}, 12);
    expect_in_process_batches(*batches, {3, 16}, 5);  // a resume elsewhere: a seek

    std::vector<std::string> replies;
    while (auto reply = intruder.receive(200ms, frame))
      replies.push_back(reply->text);
    CHECK(replies.size() == 3);
    for (const std::string& reply : replies)
      CHECK_FALSE(reply.empty());
  }
  CHECK(logged(log, "rejected a malformed frame"));
  CHECK(logged(log, "wrong secret"));
  CHECK(logged(log, "which has not said hello"));
  std::ifstream lines(dir.path() / "ledger.tsv");
  std::string line;
  int count = 0;
  while (std::getline(lines, line))
    ++count;
  CHECK(count == (12 + 5) * 8);
}

TEST_CASE("a coordinator streams each replica's share of the batches apart") {
  test::TempDir dir;
  std::vector<std::string> log;
  std::optional<WorkerThread> worker;
  stream::Coordinator coordinator({fake_mnist_job(0, 2), fake_mnist_job(1, 2)},
                                  options_in(dir, &log));
  worker.emplace(coordinator.address());
  auto second = coordinator.batches(fake_mnist_job(1, 2));
  auto first = coordinator.batches(fake_mnist_job(0, 2));
  expect_in_process_batches(*second, {0, 8}, 3, true, fake_mnist_job(1, 2));
  expect_in_process_batches(*first, {0, 8}, 3, true, fake_mnist_job(0, 2));
  CHECK_THROWS_WITH(coordinator.batches(fake_mnist_job(1, 4)),
                    Catch::Contains("no dataloader of this role and share"));
}

TEST_CASE("a flood of rejected frames is logged as a count, not line by line") {
  test::TempDir dir;
  std::vector<std::string> log;
  stream::CoordinatorOptions options = options_in(dir, &log);
  constexpr int kFrames = 2000;
  {
    std::optional<WorkerThread> worker;
    stream::Coordinator coordinator({fake_mnist_job()}, options);
    Peer intruder(coordinator.address());
    for (int i = 0; i < kFrames; ++i)
      intruder.send(std::vector<std::byte>(12, std::byte{0x41}));
    worker.emplace(coordinator.address());
    auto batches = coordinator.batches(fake_mnist_job());
    batches->seek({0, 0}, 4096);
    zmq::message_t frame;
    int replies = 0;
    for (int b = 0; b < 4096 && replies < kFrames; ++b) {
      batches->next();
      while (intruder.receive(0ms, frame))
        ++replies;
    }
    CHECK(replies == kFrames);
  }
  auto rejections = std::count_if(log.begin(), log.end(), [](const std::string& line) {
    return line.find("rejected") != std::string::npos;
  });
  CHECK(rejections <= 15);
  CHECK(logged(log, "further rejected frames are counted, not logged one by one"));
  CHECK(logged(log, "1000 frames rejected so far"));
  CHECK(logged(log, "2000 frames were rejected in all"));
}

TEST_CASE("a worker that stops answering has its batches produced by another") {
  test::TempDir dir;
  std::vector<std::string> log;
  stream::CoordinatorOptions options = options_in(dir, &log);
  options.worker_timeout = 1s;
  std::optional<WorkerThread> worker;
  stream::Coordinator coordinator({fake_mnist_job()}, options);

  // A worker that says hello, reports its dataset and then never produces anything.
  Peer stalled(coordinator.address());
  stalled.join();
  auto batches = coordinator.batches(fake_mnist_job());
  batches->seek({0, 0}, 6);  // all requests go to the stalled worker, the only one yet

  worker.emplace(coordinator.address());
  expect_in_process_batches(*batches, {0, 0}, 6, false);
  CHECK(logged(log, "stopped answering for 1 s"));
}

TEST_CASE("a worker that asks for a rank another worker has is numbered apart") {
  test::TempDir dir;
  std::vector<std::string> log;
  stream::CoordinatorOptions options = options_in(dir, &log);
  std::optional<WorkerThread> first, second;  // they end after the coordinator's bye
  stream::Coordinator coordinator({fake_mnist_job()}, options);
  first.emplace(coordinator.address(), true, 7);
  second.emplace(coordinator.address(), true, 7);
  auto batches = coordinator.batches(fake_mnist_job());
  batches->seek({0, 0}, 1000);
  const std::string renumbered = "asked for rank 7, which data worker 7 (pid " +
                                 std::to_string(::getpid()) +
                                 ") has: it is numbered 8 in this run's log and ledger";
  for (int b = 0; b < 1000 && !logged(log, renumbered); ++b)
    batches->next();
  CHECK(logged(log, "data worker 8 (pid " + std::to_string(::getpid()) + ") " + renumbered));
}

TEST_CASE("a stop request ends the wait for a batch once no worker is left to produce it") {
  test::TempDir dir;
  std::vector<std::string> log;
  stream::CoordinatorOptions options = options_in(dir, &log);
  options.worker_timeout = 1s;
  std::atomic<bool> stop{false};
  options.stop_requested = &stop;
  stream::Coordinator coordinator({fake_mnist_job()}, options);

  Peer stalled(coordinator.address());
  stalled.join();
  auto batches = coordinator.batches(fake_mnist_job());
  CHECK(batches->samples() == 1 << 16);  // it has joined
  batches->seek({0, 0}, 2);
  stop = true;
  // While the stalled worker counts as alive, the wait goes on; once it is dropped, nobody is
  // left to produce the batch, and the wait ends (where it waited out connect_timeout and threw
  // its error).
  CHECK_THROWS_AS(batches->next(), data::StoppedWaiting);
  CHECK(logged(log, "stopped answering for 1 s"));
}

TEST_CASE(
    "a local worker that ends before it connects is named with its exit, three times at most") {
  test::TempDir dir;
  std::vector<std::string> log;
  stream::CoordinatorOptions options = options_in(dir, &log);
  options.local_workers = 1;
  options.executable = "/bin/false";  // ends at once with status 1, whatever its arguments
  stream::Coordinator coordinator({fake_mnist_job()}, options);
  auto batches = coordinator.batches(fake_mnist_job());
  CHECK_THROWS_WITH(batches->samples(),
                    Catch::Contains("data worker 0 ended 3 times in a row without producing a "
                                    "batch (last: exit status 1)"));
  int named = 0;
  for (const std::string& line : log)
    if (line.starts_with("data worker 0 (pid ") && line.ends_with(") ended (exit status 1)"))
      ++named;
  CHECK(named == 3);
  CHECK(std::ranges::count(log, std::string("restarting data worker 0")) == 2);
}

TEST_CASE("flow control: a worker never holds more than its credits of requests") {
  test::TempDir dir;
  std::vector<std::string> log;
  stream::CoordinatorOptions options = options_in(dir, &log);
  options.credits = 3;
  stream::Coordinator coordinator({fake_mnist_job()}, options);
  Peer slow(coordinator.address());
  slow.join();
  auto batches = coordinator.batches(fake_mnist_job());
  batches->seek({0, 0}, 1000);  // the loop will read 1000 batches; the worker is slow

  zmq::message_t frame;
  std::vector<stream::Message> requests;
  while (auto message = slow.receive(300ms, frame))
    if (message->type == stream::MessageType::request) requests.push_back(*message);
  REQUIRE(requests.size() == 3);
  CHECK(requests[0].sample == 0);
  CHECK(requests[2].sample == 16);
}

TEST_CASE("batches come in frames from a worker without shared memory, or out of its reach") {
  test::TempDir dir;
  std::vector<std::string> log;
  std::optional<WorkerThread> worker;  // joined after the coordinator has said bye
  stream::Coordinator coordinator({fake_mnist_job()}, options_in(dir, &log));
  // Memory the coordinator cannot map (as from another host): requests name no slot.
  Peer remote(coordinator.address());
  stream::SharedSlots elsewhere = stream::SharedSlots::create(2, 1 << 16);
  remote.join(&elsewhere, 1);
  auto batches = coordinator.batches(fake_mnist_job());
  batches->seek({0, 0}, 4);
  CHECK(remote.next_request().slot == -1);
  CHECK(logged(log, "sends its batches in frames"));
  remote.socket.close();

  worker.emplace(coordinator.address(), false);
  expect_in_process_batches(*batches, {1, 8}, 6);
}

TEST_CASE("a batch in shared memory is read in its slot, and one in the wrong slot is refused") {
  test::TempDir dir;
  std::vector<std::string> log;
  stream::CoordinatorOptions options = options_in(dir, &log);
  std::optional<WorkerThread> worker;
  stream::Coordinator coordinator({fake_mnist_job()}, options);
  stream::SharedSlots slots = stream::SharedSlots::create(4, 1 << 16);
  Peer peer(coordinator.address());
  peer.join(&slots);
  auto batches = coordinator.batches(fake_mnist_job());
  batches->seek({0, 0}, 2);

  // The first batch: what the worker writes into the slot it is given.
  auto local = data::read_in_process(fake_mnist_job());
  local->seek({0, 0}, 2);
  stream::Message request = peer.next_request();
  REQUIRE(request.slot >= 0);
  data::BatchData expected(fake_mnist_job().fields, 8);
  data::BatchReader reader(fake_mnist_job());
  auto indices = reader.read({request.epoch, request.sample}, expected);
  expected.copy_to(slots.slot(static_cast<std::size_t>(request.slot)));
  stream::Message batch = stream::make_message(stream::MessageType::batch);
  batch.ticket = request.ticket;
  batch.slot = request.slot;
  batch.values.assign(indices.begin(), indices.end());
  peer.send(batch);
  // The frame carried no payload: the values can only have come from the slot.
  CHECK(std::ranges::equal(batches->next().floats[0], local->next().floats[0]));

  // The second, claimed to be in another slot: the peer is dropped and a real worker makes it.
  request = peer.next_request();
  batch.ticket = request.ticket;
  batch.slot = request.slot + 1;
  peer.send(batch);
  worker.emplace(coordinator.address());
  CHECK(std::ranges::equal(batches->next().floats[0], local->next().floats[0]));
  CHECK(logged(log, "in the wrong slot"));
}

namespace {

void count_signal(int) {}

// Sends SIGUSR1, which interrupts system calls like the stop request's SIGTERM, to one thread
// every few microseconds while it lives.
class SignalStorm {
 public:
  explicit SignalStorm(pthread_t target) {
    struct sigaction action {};
    action.sa_handler = count_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // as the stop request's handler: poll(2) is never restarted
    sigaction(SIGUSR1, &action, &previous_);
    thread_ = std::thread([this, target] {
      while (!done_.load()) {
        pthread_kill(target, SIGUSR1);
        std::this_thread::sleep_for(20us);
      }
    });
  }
  ~SignalStorm() {
    done_.store(true);
    thread_.join();
    sigaction(SIGUSR1, &previous_, nullptr);
  }

 private:
  struct sigaction previous_ {};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("signals that interrupt system calls (a stop request) do not stop the streaming") {
  test::TempDir dir;
  std::vector<std::string> log;
  std::optional<WorkerThread> worker;
  stream::Coordinator coordinator({fake_mnist_job()}, options_in(dir, &log));
  worker.emplace(coordinator.address(), GENERATE(true, false));
  auto batches = coordinator.batches(fake_mnist_job());
  SignalStorm storm(pthread_self());
  expect_in_process_batches(*batches, {0, 0}, 1000);
}

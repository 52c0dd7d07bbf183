#include "thread_team.hpp"

#include <sched.h>

#include <algorithm>

namespace csrun::runtime {

namespace {

// Helpers poll this many times for work before sleeping: kernels of a step follow each other
// within microseconds, and waking a sleeping thread costs more than that. The caller polls as
// long for the helpers to finish their parts: sleeping at once, it paid a wake-up after every
// kernel split across the team (fc_mnist trained 4-10 % faster polling).
constexpr int kSpinPolls = 2000;

// Yields until `done()` or until kSpinPolls polls have passed.
template <class Done>
void poll(Done done) {
  for (int polled = 0; polled < kSpinPolls && !done(); ++polled)
    std::this_thread::yield();
}

}  // namespace

ThreadTeam::ThreadTeam(int size) {
  for (int part = 1; part < size; ++part)
    helpers_.emplace_back([this, part] { serve(part); });
}

ThreadTeam::~ThreadTeam() {
  stopping_ = true;
  generation_.fetch_add(1);
  generation_.notify_all();
  for (std::thread& helper : helpers_)
    helper.join();
}

int ThreadTeam::available_cores() {
  cpu_set_t cores;
  if (sched_getaffinity(0, sizeof(cores), &cores) != 0)
    return std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, CPU_COUNT(&cores));
}

void ThreadTeam::dispatch(Task task, void* context) {
  if (helpers_.empty()) {
    task(context, 0);
    return;
  }
  task_ = task;
  context_ = context;
  pending_ = static_cast<int>(helpers_.size());
  generation_.fetch_add(1);
  generation_.notify_all();
  task(context, 0);
  poll([this] { return pending_.load() == 0; });
  for (int left = pending_.load(); left != 0; left = pending_.load())
    pending_.wait(left);
}

void ThreadTeam::serve(int part) {
  std::uint64_t seen = 0;
  while (true) {
    poll([&] { return generation_.load() != seen; });
    generation_.wait(seen);
    seen = generation_.load();
    if (stopping_) return;
    task_(context_, part);
    if (pending_.fetch_sub(1) == 1) pending_.notify_one();
  }
}

}  // namespace csrun::runtime

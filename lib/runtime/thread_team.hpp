#pragma once

// The host cores a step's large kernels split their work across. The team is made once with the
// executable and its helpers wait between kernels, so a step starts no thread and allocates
// nothing.

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace csrun::runtime {

class ThreadTeam {
 public:
  // `size` threads in all: the caller and size - 1 helpers.
  explicit ThreadTeam(int size);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  // Calls work(part) for every part in [0, size()), part 0 on the calling thread, and returns
  // when all have returned. `work` must not throw.
  template <class Work>
  void run(Work& work) {
    dispatch([](void* context, int part) { (*static_cast<Work*>(context))(part); }, &work);
  }

  // The cores this process may run on (its CPU affinity).
  static int available_cores();

 private:
  using Task = void (*)(void*, int);
  void dispatch(Task task, void* context);
  void serve(int part);

  std::vector<std::thread> helpers_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
  Task task_ = nullptr;
  void* context_ = nullptr;
};

// Calls body(part, first, last) on row ranges covering [0, rows), part in [0, team size): split
// across `team` when there is one and the work (`elements` in all) repays waking it, else on the
// caller alone, as part 0. `body` must not throw.
template <class Body>
void split_rows_in_parts(ThreadTeam* team, std::int64_t rows, std::int64_t elements, Body&& body) {
  constexpr std::int64_t kSplitElements = 1 << 16;
  if (team == nullptr || elements < kSplitElements || rows < 2 * team->size())
    return body(0, std::int64_t{0}, rows);
  std::int64_t parts = team->size();
  auto work = [&](int part) { body(part, rows * part / parts, rows * (part + 1) / parts); };
  team->run(work);
}

// The same, calling body(first, last).
template <class Body>
void split_rows(ThreadTeam* team, std::int64_t rows, std::int64_t elements, Body&& body) {
  split_rows_in_parts(team, rows, elements,
                      [&](int, std::int64_t first, std::int64_t last) { body(first, last); });
}

}  // namespace csrun::runtime

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace csrun::stream {

// Batch slots in memory a data worker shares with a coordinator on the same host, so that a
// batch crosses no socket: the worker writes it into the slot a request names and the
// coordinator's loop reads it there. The worker creates the memory (an anonymous memfd, its
// space reserved and sealed against resizing, a random nonce in its header) and offers its fd;
// the coordinator maps it through /proc/PID/fd/FD, read-only, after checking the seal, the
// nonce and the sizes. A worker on another host (or in another PID namespace) fails that check
// and sends its batches in frames instead.
class SharedSlots {
 public:
  // The worker's side: `count` slots of at least `slot_bytes` each. Throws std::runtime_error
  // when the memory cannot be had (say, the memory limit is reached).
  static SharedSlots create(std::size_t count, std::size_t slot_bytes);
  // The coordinator's side: the slots worker `pid` offered as `fd` with `nonce`, each at least
  // `least_slot_bytes`; nullopt, and why in `why`, when they cannot be mapped from here.
  static std::optional<SharedSlots> open(std::int64_t pid, std::int64_t fd, std::uint64_t nonce,
                                         std::size_t least_slot_bytes, std::string& why);

  SharedSlots(SharedSlots&& other) noexcept;
  SharedSlots& operator=(SharedSlots&& other) noexcept;
  SharedSlots(const SharedSlots&) = delete;
  SharedSlots& operator=(const SharedSlots&) = delete;
  ~SharedSlots();

  int fd() const { return fd_; }  // the worker's; -1 on the coordinator's side
  std::uint64_t nonce() const { return nonce_; }
  std::size_t count() const { return count_; }
  std::size_t slot_bytes() const { return slot_bytes_; }
  // Slot `index` (< count()); writable on the worker's side only.
  std::span<std::byte> slot(std::size_t index);
  std::span<const std::byte> slot(std::size_t index) const;

 private:
  SharedSlots() = default;
  void release();
  std::byte* slot_start(std::size_t index) const;

  int fd_ = -1;
  std::byte* memory_ = nullptr;
  std::size_t mapped_ = 0;
  std::uint64_t nonce_ = 0;
  std::size_t count_ = 0;
  std::size_t slot_bytes_ = 0;
};

// The coordinator's account of one worker's slots: which are free. A Lease holds one slot (and
// the mapping) from the request that names it until the loop has read the batch in it, so a
// worker is never asked to write into a slot whose batch is still wanted.
class SlotPool {
 public:
  explicit SlotPool(SharedSlots slots);

  class Lease {
   public:
    Lease() = default;  // no slot: the batch comes in its frame
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    std::int64_t index() const;  // -1 when there is no slot
    // The first `size` bytes of the slot (size <= its bytes).
    std::span<const std::byte> bytes(std::size_t size) const;

   private:
    friend SlotPool;
    Lease(std::shared_ptr<SlotPool> pool, std::size_t index)
        : pool_(std::move(pool)), index_(index) {}
    void give_back();

    std::shared_ptr<SlotPool> pool_;
    std::size_t index_ = 0;
  };

  // A free slot of `pool`; no slot when all are leased.
  static Lease lease(const std::shared_ptr<SlotPool>& pool);

 private:
  SharedSlots slots_;
  std::vector<std::size_t> free_;
};

}  // namespace csrun::stream

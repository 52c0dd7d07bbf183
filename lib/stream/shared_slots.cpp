#include "shared_slots.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>

namespace csrun::stream {

namespace {

// The first page of the memory: what the coordinator checks before it reads a slot.
struct Header {
  char magic[8];
  std::uint64_t nonce;
  std::uint64_t count;
  std::uint64_t slot_bytes;
};

constexpr char kSlotsMagic[8] = {'C', 'S', 'R', 'S', 'L', 'O', 'T', 'S'};
// More than any worker offers (it offers a few per credit); a header claiming more is not one.
constexpr std::uint64_t kMostSlots = 1024;

std::size_t page_size() {
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

std::size_t whole_pages(std::size_t bytes) {
  std::size_t page = page_size();
  return (bytes + page - 1) / page * page;
}

std::uint64_t random_nonce() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

std::string error_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// An fd closed when it goes out of scope.
struct OwnedFd {
  int fd;
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

}  // namespace

SharedSlots SharedSlots::create(std::size_t count, std::size_t slot_bytes) {
  OwnedFd memory{::memfd_create("csrun-batch-slots", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
  if (memory.fd < 0) throw std::runtime_error(error_text("cannot create shared batch memory"));
  SharedSlots slots;
  slots.count_ = count;
  slots.slot_bytes_ = whole_pages(std::max<std::size_t>(slot_bytes, 1));
  slots.mapped_ = page_size() + count * slots.slot_bytes_;
  auto size = static_cast<off_t>(slots.mapped_);
  // Reserved now, so that a full memory limit is this error and not a SIGBUS at a later write.
  if (::ftruncate(memory.fd, size) != 0 || ::fallocate(memory.fd, 0, 0, size) != 0)
    throw std::runtime_error(
        error_text("cannot reserve " + std::to_string(size) + " bytes of shared batch memory"));
  void* mapped = ::mmap(nullptr, slots.mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, memory.fd, 0);
  if (mapped == MAP_FAILED) throw std::runtime_error(error_text("cannot map shared batch memory"));
  slots.memory_ = static_cast<std::byte*>(mapped);
  slots.nonce_ = random_nonce();
  Header header{};
  std::memcpy(header.magic, kSlotsMagic, sizeof kSlotsMagic);
  header.nonce = slots.nonce_;
  header.count = count;
  header.slot_bytes = slots.slot_bytes_;
  std::memcpy(slots.memory_, &header, sizeof header);
  // Sealed, so that the coordinator can trust that the memory it maps stays that large.
  if (::fcntl(memory.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    throw std::runtime_error(error_text("cannot seal shared batch memory"));
  slots.fd_ = memory.release();
  return slots;
}

std::optional<SharedSlots> SharedSlots::open(std::int64_t pid, std::int64_t fd, std::uint64_t nonce,
                                             std::size_t least_slot_bytes, std::string& why) {
  if (pid <= 0 || fd < 0) {
    why = "no such process or file";
    return std::nullopt;
  }
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  OwnedFd memory{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (memory.fd < 0) {
    why = error_text("cannot open " + path);
    return std::nullopt;
  }
  struct stat status {};
  int seals = ::fcntl(memory.fd, F_GET_SEALS);
  if (::fstat(memory.fd, &status) != 0 || !S_ISREG(status.st_mode) || seals < 0 ||
      !(seals & F_SEAL_SHRINK)) {
    why = path + " is not sealed shared memory";
    return std::nullopt;
  }
  auto size = static_cast<std::size_t>(status.st_size);
  if (size < page_size()) {
    why = path + " is smaller than its header";
    return std::nullopt;
  }
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, memory.fd, 0);
  if (mapped == MAP_FAILED) {
    why = error_text("cannot map " + path);
    return std::nullopt;
  }
  SharedSlots slots;
  slots.memory_ = static_cast<std::byte*>(mapped);
  slots.mapped_ = size;
  Header header{};
  std::memcpy(&header, slots.memory_, sizeof header);
  if (std::memcmp(header.magic, kSlotsMagic, sizeof kSlotsMagic) != 0 || header.nonce != nonce) {
    why = path + " is not the worker's batch memory (another host?)";
    return std::nullopt;
  }
  bool fits = header.count >= 1 && header.count <= kMostSlots && header.slot_bytes <= size &&
              header.slot_bytes % page_size() == 0 &&
              page_size() + header.count * header.slot_bytes <= size;
  if (!fits || header.slot_bytes < least_slot_bytes) {
    why = path + " has slots that do not fit its size or the batches";
    return std::nullopt;
  }
  slots.nonce_ = nonce;
  slots.count_ = header.count;
  slots.slot_bytes_ = header.slot_bytes;
  return slots;
}

SharedSlots::SharedSlots(SharedSlots&& other) noexcept {
  *this = std::move(other);
}

SharedSlots& SharedSlots::operator=(SharedSlots&& other) noexcept {
  if (this == &other) return *this;
  release();
  fd_ = std::exchange(other.fd_, -1);
  memory_ = std::exchange(other.memory_, nullptr);
  mapped_ = std::exchange(other.mapped_, 0);
  nonce_ = other.nonce_;
  count_ = other.count_;
  slot_bytes_ = other.slot_bytes_;
  return *this;
}

SharedSlots::~SharedSlots() {
  release();
}

void SharedSlots::release() {
  if (memory_) ::munmap(memory_, mapped_);
  if (fd_ >= 0) ::close(fd_);
  memory_ = nullptr;
  fd_ = -1;
}

std::span<std::byte> SharedSlots::slot(std::size_t index) {
  return {slot_start(index), slot_bytes_};
}

std::span<const std::byte> SharedSlots::slot(std::size_t index) const {
  return {slot_start(index), slot_bytes_};
}

std::byte* SharedSlots::slot_start(std::size_t index) const {
  return memory_ + page_size() + index * slot_bytes_;
}

SlotPool::SlotPool(SharedSlots slots) : slots_(std::move(slots)) {
  for (std::size_t index = slots_.count(); index-- > 0;)
    free_.push_back(index);
}

SlotPool::Lease SlotPool::lease(const std::shared_ptr<SlotPool>& pool) {
  if (!pool || pool->free_.empty()) return {};
  std::size_t index = pool->free_.back();
  pool->free_.pop_back();
  return Lease(pool, index);
}

SlotPool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::move(other.pool_)), index_(other.index_) {}

SlotPool::Lease& SlotPool::Lease::operator=(Lease&& other) noexcept {
  if (this == &other) return *this;
  give_back();
  pool_ = std::move(other.pool_);
  index_ = other.index_;
  return *this;
}

SlotPool::Lease::~Lease() {
  give_back();
}

void SlotPool::Lease::give_back() {
  if (pool_) pool_->free_.push_back(index_);
  pool_.reset();
}

std::int64_t SlotPool::Lease::index() const {
  return pool_ ? static_cast<std::int64_t>(index_) : -1;
}

std::span<const std::byte> SlotPool::Lease::bytes(std::size_t size) const {
  return std::as_const(pool_->slots_).slot(index_).first(size);
}

}  // namespace csrun::stream

#include "replica_group.hpp"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#ifdef CSRUN_WITH_MPI
#include <mpi.h>
#endif

namespace csrun::replicas {

namespace {

// MPI counts are ints: long buffers go in pieces of this many elements.
constexpr std::size_t kPiece = std::size_t{1} << 26;

#ifdef CSRUN_WITH_MPI
template <class T>
MPI_Datatype mpi_type() {
  return sizeof(T) == sizeof(float) ? MPI_FLOAT : MPI_DOUBLE;
}

void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  throw std::runtime_error(std::string("MPI: ") + call + " failed");
}

template <class T>
void receive_from(std::span<T> values, int source) {
  for (std::size_t at = 0; at < values.size(); at += kPiece) {
    auto count = static_cast<int>(std::min(kPiece, values.size() - at));
    check(MPI_Recv(values.data() + at, count, mpi_type<T>(), source, 0, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE),
          "MPI_Recv");
  }
}

template <class T>
void send_to(std::span<const T> values, int target) {
  for (std::size_t at = 0; at < values.size(); at += kPiece) {
    auto count = static_cast<int>(std::min(kPiece, values.size() - at));
    check(MPI_Send(values.data() + at, count, mpi_type<T>(), target, 0, MPI_COMM_WORLD),
          "MPI_Send");
  }
}

template <class T>
void broadcast_from(std::span<T> values, int root) {
  for (std::size_t at = 0; at < values.size(); at += kPiece) {
    auto count = static_cast<int>(std::min(kPiece, values.size() - at));
    check(MPI_Bcast(values.data() + at, count, mpi_type<T>(), root, MPI_COMM_WORLD), "MPI_Bcast");
  }
}
#endif

template <class T>
void receive(const ReplicaGroup& group, std::span<T> sum) {
  if (group.rank() == 0) return;
#ifdef CSRUN_WITH_MPI
  receive_from(sum, group.rank() - 1);
#else
  (void)sum;
#endif
}

template <class T>
void pass(const ReplicaGroup& group, std::span<const T> sum) {
  if (group.rank() + 1 >= group.size()) return;
#ifdef CSRUN_WITH_MPI
  send_to(sum, group.rank() + 1);
#else
  (void)sum;
#endif
}

template <class T>
void share(const ReplicaGroup& group, std::span<T> total) {
  if (group.size() == 1) return;
#ifdef CSRUN_WITH_MPI
  broadcast_from(total, group.size() - 1);
#else
  (void)total;
#endif
}

}  // namespace

bool started_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

bool built_with_mpi() {
#ifdef CSRUN_WITH_MPI
  return true;
#else
  return false;
#endif
}

ReplicaGroup ReplicaGroup::join() {
  ReplicaGroup group;
  if (!started_by_mpi()) return group;
#ifdef CSRUN_WITH_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    check(MPI_Init(nullptr, nullptr), "MPI_Init");
    group.finalize_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &group.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &group.size_);
  // An MPI error becomes an exception naming the call, which the CLI reports.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return group;
#else
  throw std::runtime_error(
      "an MPI launcher started this csrun, which was built without MPI (install libopenmpi-dev "
      "and build again), so its replicas cannot run as ranks; run one process with --num_csx "
      "instead");
#endif
}

ReplicaGroup::ReplicaGroup(ReplicaGroup&& other) noexcept
    : rank_(other.rank_), size_(other.size_), finalize_(std::exchange(other.finalize_, false)) {}

ReplicaGroup::~ReplicaGroup() {
#ifdef CSRUN_WITH_MPI
  if (finalize_) MPI_Finalize();
#endif
}

void ReplicaGroup::receive_sum(std::span<float> sum) const {
  receive(*this, sum);
}
void ReplicaGroup::receive_sum(std::span<double> sum) const {
  receive(*this, sum);
}
void ReplicaGroup::pass_sum(std::span<const float> sum) const {
  pass(*this, sum);
}
void ReplicaGroup::pass_sum(std::span<const double> sum) const {
  pass(*this, sum);
}
void ReplicaGroup::share_total(std::span<float> total) const {
  share(*this, total);
}
void ReplicaGroup::share_total(std::span<double> total) const {
  share(*this, total);
}

bool ReplicaGroup::any(bool yes) const {
  if (size_ == 1) return yes;
#ifdef CSRUN_WITH_MPI
  int mine = yes ? 1 : 0;
  int result = 0;
  check(MPI_Allreduce(&mine, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return result != 0;
#else
  return yes;
#endif
}

std::string ReplicaGroup::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

}  // namespace csrun::replicas

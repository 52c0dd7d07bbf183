#pragma once

#include <span>
#include <string>

namespace csrun::replicas {

// The processes a data-parallel run spans: this process alone, or the ranks of the MPI job it was
// started in (mpirun, or srun --mpi=pmix), each running one replica. Ranks combine their
// replicas' gradients along a chain, in rank order (rank 0's sum, plus rank 1's, ...), so a sum
// has the same bits as the same replicas added in one process.
class ReplicaGroup {
 public:
  // This process alone.
  ReplicaGroup() = default;
  ~ReplicaGroup();
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  // The MPI job this process was started in (initializing MPI for the group's lifetime), or this
  // process alone when no MPI launcher started it. Throws std::runtime_error when an MPI launcher
  // started it and this csrun was built without MPI.
  static ReplicaGroup join();
  ReplicaGroup(ReplicaGroup&&) noexcept;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool primary() const { return rank_ == 0; }

  // The chain: a rank after the first receives the sum so far from its predecessor, adds its
  // own part, and (unless it is the last) passes the sum on; then the last rank's total goes to
  // every rank. Each call is collective: every rank makes it, with values of the same size.
  void receive_sum(std::span<float> sum) const;
  void receive_sum(std::span<double> sum) const;
  void pass_sum(std::span<const float> sum) const;
  void pass_sum(std::span<const double> sum) const;
  void share_total(std::span<float> total) const;
  void share_total(std::span<double> total) const;
  // Whether any rank says yes (a stop request one rank received).
  bool any(bool yes) const;

  // Where the ranks run, for the log: "rank 1 of 4".
  std::string describe() const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool finalize_ = false;
};

// Whether this process was started by an MPI launcher (mpirun, srun --mpi=pmix).
bool started_by_mpi();
// Whether this csrun was built with MPI.
bool built_with_mpi();

}  // namespace csrun::replicas

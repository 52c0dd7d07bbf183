#pragma once

// The order of every f32 sum the kernels take along a row (reduce_sum, reduce_mean, the sums a
// chain takes of its values): in double, a chunk of kSumChunk elements at a time (eight lanes
// striding the chunk, the lanes added in order, then the chunk's last few elements), the chunks'
// totals added in order. The order depends on the row's length alone, so a long row's chunks can
// be shared across the team, and a chain that sums one of its values chunk by chunk as it computes
// it (compiler::HostStep::sums) gives the reduce kernel's bits. Internal to lib/runtime.

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

namespace csrun::runtime {

inline constexpr std::int64_t kSumChunk = 4096;
inline constexpr std::int64_t kSumLanes = 8;

inline std::int64_t sum_chunks(std::int64_t length) {
  return (length + kSumChunk - 1) / kSumChunk;
}

// The sum of term(i) for i < length (at most a chunk), over eight independent lanes so that the
// compiler vectorizes it.
template <class Term>
double sum_over_lanes(std::int64_t length, Term term) {
  std::array<double, kSumLanes> lanes{};
  std::int64_t i = 0;
  for (; i + kSumLanes <= length; i += kSumLanes) {
    for (std::int64_t j = 0; j < kSumLanes; ++j)
      lanes[static_cast<std::size_t>(j)] += term(i + j);
  }
  double total = 0.0;
  for (double lane : lanes)
    total += lane;
  for (; i < length; ++i)
    total += term(i);
  return total;
}

// The total of a chunk's eight lane sums, added in order.
inline double lanes_total(std::span<const double, kSumLanes> lanes) {
  double sum = 0.0;
  for (double lane : lanes)
    sum += lane;
  return sum;
}

// A chunk's sum taken a run of its elements at a time, in order: sum_over_lanes' bits.
class ChunkSum {
 public:
  ChunkSum() = default;
  explicit ChunkSum(std::int64_t length)
      : length_(length), lane_end_(length / kSumLanes * kSumLanes) {}

  // Adds the chunk's elements [offset, offset + count).
  void add(std::int64_t offset, const float* values, std::int64_t count) {
    if (offset % kSumLanes == 0 && count % kSumLanes == 0 && offset + count <= lane_end_) {
      for (std::int64_t i = 0; i < count; i += kSumLanes) {
        for (std::int64_t j = 0; j < kSumLanes; ++j)
          lanes_[static_cast<std::size_t>(j)] += static_cast<double>(values[i + j]);
      }
      return;
    }
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t element = offset + i;
      if (element < lane_end_) {
        lanes_[static_cast<std::size_t>(element % kSumLanes)] += static_cast<double>(values[i]);
      } else {
        tail_[static_cast<std::size_t>(element - lane_end_)] = static_cast<double>(values[i]);
      }
    }
  }

  // Once every element was added.
  double total() const {
    double sum = lanes_total(lanes_);
    for (std::int64_t i = 0; i < length_ - lane_end_; ++i)
      sum += tail_[static_cast<std::size_t>(i)];
    return sum;
  }

 private:
  std::array<double, kSumLanes> lanes_{};
  std::array<double, kSumLanes> tail_{};
  std::int64_t length_ = 0;
  std::int64_t lane_end_ = 0;
};

// The sum of chunk `chunk` of an f32 row of `length` values.
inline double chunk_sum(const float* row, std::int64_t length, std::int64_t chunk) {
  const float* first = row + chunk * kSumChunk;
  return sum_over_lanes(std::min(kSumChunk, length - chunk * kSumChunk),
                        [first](std::int64_t i) { return static_cast<double>(first[i]); });
}

// A row's sum from its chunks' totals (at least one), `stride` apart.
inline double add_in_order(const double* totals, std::int64_t chunks, std::int64_t stride = 1) {
  double total = totals[0];
  for (std::int64_t c = 1; c < chunks; ++c)
    total += totals[c * stride];
  return total;
}

// The sum of term(i) for i < length, a row's terms in this order.
template <class Term>
double row_total(std::int64_t length, Term term) {
  double total = 0.0;
  for (std::int64_t c = 0; c < sum_chunks(length); ++c) {
    std::int64_t first = c * kSumChunk;
    double chunk = sum_over_lanes(std::min(kSumChunk, length - first),
                                  [&](std::int64_t i) { return term(first + i); });
    total = c == 0 ? chunk : total + chunk;
  }
  return total;
}

// The sum of an f32 row of `length` values.
inline double row_sum(const float* row, std::int64_t length) {
  return row_total(length, [row](std::int64_t i) { return static_cast<double>(row[i]); });
}

}  // namespace csrun::runtime

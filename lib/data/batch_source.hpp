#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "loader_job.hpp"

namespace csrun::data {

// Where a batch starts: the epoch and its first sample's place in that epoch's sample order.
struct BatchPosition {
  std::int64_t epoch = 0;
  std::int64_t sample = 0;
  bool operator==(const BatchPosition&) const = default;
};

// Walks a dataloader's batches in the run's order: a batch that would run past the end of the
// epoch starts the next epoch instead (the remainder is dropped, as drop_last does).
class BatchCursor {
 public:
  BatchCursor(std::int64_t samples, std::int64_t batch_size)
      : samples_(samples), size_(batch_size) {}

  // Where the next batch is read from; it may still wrap into the next epoch. A checkpoint
  // stores this.
  BatchPosition position() const { return at_; }
  void seek(BatchPosition at) { at_ = at; }
  // The start of the next batch; the cursor moves past it.
  BatchPosition take();
  std::int64_t batches_per_epoch() const { return samples_ / size_; }

 private:
  std::int64_t samples_;
  std::int64_t size_;
  BatchPosition at_;
};

// Reads the batches of a LoaderJob from its dataset in this process. What a batch holds is a
// function of the job and the batch's position only, whichever process reads it.
class BatchReader {
 public:
  explicit BatchReader(const LoaderJob& job);

  std::int64_t samples() const { return dataset_->size(); }  // per epoch
  // Reads the job's share of the batch that starts at `at` (a position BatchCursor::take gave)
  // into `batch` (of job.rows() samples); returns the dataset indices of its samples, in order.
  std::span<const std::int64_t> read(BatchPosition at, BatchData& batch);

 private:
  std::unique_ptr<Dataset> dataset_;
  LoaderJob job_;
  std::int64_t order_epoch_ = -1;
  std::vector<std::int64_t> order_;
};

// What BatchSource::next() throws when the run was asked to stop while the source waited for a
// batch that nobody is producing (its data workers all gone): nothing of the batch was read, and
// the run stops as it does between steps.
class StoppedWaiting : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The batches of one dataloader in the run's order, wherever they are produced: read in this
// process, or streamed from data workers.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual std::int64_t samples() const = 0;  // per epoch
  // The next `count` batches are read from `at` on; a source may produce them ahead.
  virtual void seek(BatchPosition at, std::int64_t count) = 0;
  // The next batch; valid until the next call. Throws StoppedWaiting (see there).
  virtual const BatchView& next() = 0;
};

class SampleLedger;

// A BatchSource that reads the job's dataset in this process (num_workers_per_csx: 0); each
// batch's samples go into `ledger` when there is one.
std::unique_ptr<BatchSource> read_in_process(const LoaderJob& job, SampleLedger* ledger = nullptr);

}  // namespace csrun::data

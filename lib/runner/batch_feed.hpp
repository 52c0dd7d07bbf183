#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/batch_source.hpp"
#include "data/dataloader.hpp"
#include "runtime/executable.hpp"

namespace csrun::runner {

// A dataloader's batches in the run's order.
class BatchFeed {
 public:
  BatchFeed(std::unique_ptr<data::BatchSource> source, std::int64_t batch_size);

  std::int64_t batches_per_epoch() const { return cursor_.batches_per_epoch(); }
  std::int64_t samples_per_epoch() const { return source_->samples(); }
  data::BatchPosition position() const { return cursor_.position(); }
  void seek(data::BatchPosition at) { cursor_.seek(at); }
  // The next `count` batches will be read from the position on: the source may fetch ahead.
  void expect(std::int64_t count) { source_->seek(cursor_.position(), count); }
  // The next batch, valid until the following call. A source that stops waiting
  // (data::StoppedWaiting) leaves the feed where it was.
  const data::BatchView& next();

 private:
  std::unique_ptr<data::BatchSource> source_;
  data::BatchCursor cursor_;
};

// A step's batch inputs: the slots of the fields (in the order of the batch's fields).
class BatchInputs {
 public:
  BatchInputs(const std::vector<data::SampleField>& fields, const runtime::Executable& executable);

  // Writes `rows` samples of `batch` from `first_row` on (all of them by default) into the
  // executable's inputs.
  void write(runtime::Executable& executable, const data::BatchView& batch,
             std::int64_t first_row = 0, std::int64_t rows = -1) const;

 private:
  std::vector<data::SampleField> fields_;
  std::vector<runtime::Executable::Slot> slots_;
};

}  // namespace csrun::runner

#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/batch_source.hpp"
#include "data/dataloader.hpp"
#include "runtime/executable.hpp"

namespace csrun::runner {

// A dataloader's batches in the run's order, written into a step's inputs.
class BatchFeed {
 public:
  BatchFeed(std::unique_ptr<data::BatchSource> source, std::vector<data::SampleField> fields,
            std::int64_t batch_size, const runtime::Executable& executable);

  std::int64_t batches_per_epoch() const { return cursor_.batches_per_epoch(); }
  data::BatchPosition position() const { return cursor_.position(); }
  void seek(data::BatchPosition at) { cursor_.seek(at); }
  // The next `count` batches will be read from the position on: the source may fetch ahead.
  void expect(std::int64_t count) { source_->seek(cursor_.position(), count); }
  // Writes the next batch into the executable's input slots.
  void next(runtime::Executable& executable);

 private:
  std::unique_ptr<data::BatchSource> source_;
  std::vector<data::SampleField> fields_;
  data::BatchCursor cursor_;
  std::vector<runtime::Executable::Slot> slots_;
};

}  // namespace csrun::runner

#include "batch_feed.hpp"

namespace csrun::runner {

BatchFeed::BatchFeed(std::unique_ptr<data::BatchSource> source,
                     std::vector<data::SampleField> fields, std::int64_t batch_size,
                     const runtime::Executable& executable)
    : source_(std::move(source)),
      fields_(std::move(fields)),
      cursor_(source_->samples(), batch_size) {
  for (const data::SampleField& field : fields_)
    slots_.push_back(executable.slot(field.name));
}

void BatchFeed::next(runtime::Executable& executable) {
  cursor_.take();
  const data::BatchView& batch = source_->next();
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    if (fields_[f].integer) {
      executable.write(slots_[f], batch.integers[f]);
    } else {
      executable.write(slots_[f], batch.floats[f]);
    }
  }
}

}  // namespace csrun::runner

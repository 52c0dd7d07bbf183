#include "batch_feed.hpp"

namespace csrun::runner {

namespace {

template <class T>
std::span<const T> rows_of(std::span<const T> values, std::int64_t elements, std::int64_t first,
                           std::int64_t rows) {
  if (rows < 0) return values;
  return values.subspan(static_cast<std::size_t>(first * elements),
                        static_cast<std::size_t>(rows * elements));
}

}  // namespace

BatchFeed::BatchFeed(std::unique_ptr<data::BatchSource> source, std::int64_t batch_size)
    : source_(std::move(source)), cursor_(source_->samples(), batch_size) {}

const data::BatchView& BatchFeed::next() {
  data::BatchPosition at = cursor_.position();
  cursor_.take();
  try {
    return source_->next();
  } catch (const data::StoppedWaiting&) {
    cursor_.seek(at);  // the batch was not read: a checkpoint resumes at it
    throw;
  }
}

BatchInputs::BatchInputs(const std::vector<data::SampleField>& fields,
                         const runtime::Executable& executable)
    : fields_(fields) {
  for (const data::SampleField& field : fields_)
    slots_.push_back(executable.slot(field.name));
}

void BatchInputs::write(runtime::Executable& executable, const data::BatchView& batch,
                        std::int64_t first_row, std::int64_t rows) const {
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    std::int64_t elements = fields_[f].elements;
    if (fields_[f].integer) {
      executable.write(slots_[f], rows_of(batch.integers[f], elements, first_row, rows));
    } else {
      executable.write(slots_[f], rows_of(batch.floats[f], elements, first_row, rows));
    }
  }
}

}  // namespace csrun::runner

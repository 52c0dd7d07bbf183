#include "batch_source.hpp"

#include <stdexcept>

#include "sample_ledger.hpp"

namespace csrun::data {

BatchPosition BatchCursor::take() {
  if (at_.sample + size_ > samples_) at_ = {at_.epoch + 1, 0};
  BatchPosition start = at_;
  at_.sample += size_;
  return start;
}

BatchReader::BatchReader(const LoaderJob& job)
    : dataset_(open_dataset(job.loader, job.fields, job.seed)), job_(job) {
  if (dataset_->size() < job_.batch_size) {
    throw std::runtime_error(
        "the " + job_.loader.processor + " dataset holds " + std::to_string(dataset_->size()) +
        " samples, fewer than one batch of " + std::to_string(job_.batch_size));
  }
}

std::span<const std::int64_t> BatchReader::read(BatchPosition at, BatchData& batch) {
  if (at.epoch < 0 || at.sample < 0 || at.sample + job_.batch_size > dataset_->size()) {
    throw std::runtime_error("no batch of " + std::to_string(job_.batch_size) + " at sample " +
                             std::to_string(at.sample) + " of epoch " + std::to_string(at.epoch) +
                             " in a dataset of " + std::to_string(dataset_->size()) + " samples");
  }
  if (at.epoch != order_epoch_) {
    order_ = sample_order(dataset_->size(), job_.seed, at.epoch, job_.loader.shuffle);
    order_epoch_ = at.epoch;
  }
  std::span<const std::int64_t> indices(order_.data() + at.sample + job_.first_row(),
                                        static_cast<std::size_t>(job_.rows()));
  for (std::size_t row = 0; row < indices.size(); ++row)
    dataset_->read(indices[row], at.epoch, static_cast<std::int64_t>(row), batch);
  return indices;
}

namespace {

class InProcessBatches : public BatchSource {
 public:
  InProcessBatches(const LoaderJob& job, SampleLedger* ledger)
      : reader_(job),
        role_(job.loader.role),
        ledger_(ledger),
        cursor_(reader_.samples(), job.batch_size),
        first_row_(job.first_row()),
        batch_(job.fields, job.rows()),
        view_(batch_) {}

  std::int64_t samples() const override { return reader_.samples(); }
  void seek(BatchPosition at, std::int64_t) override { cursor_.seek(at); }
  const BatchView& next() override {
    BatchPosition at = cursor_.take();
    std::span<const std::int64_t> indices = reader_.read(at, batch_);
    if (ledger_) ledger_->record(role_, {at.epoch, at.sample + first_row_}, indices, "in-process");
    return view_;
  }

 private:
  BatchReader reader_;
  LoaderRole role_;
  SampleLedger* ledger_;
  BatchCursor cursor_;
  std::int64_t first_row_;
  BatchData batch_;
  BatchView view_;  // of batch_, whose values never move
};

}  // namespace

std::unique_ptr<BatchSource> read_in_process(const LoaderJob& job, SampleLedger* ledger) {
  return std::make_unique<InProcessBatches>(job, ledger);
}

}  // namespace csrun::data

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dataloader.hpp"

namespace csrun::data {

// One field of the batch a model reads, per sample.
struct SampleField {
  std::string name;
  bool integer = false;
  std::int64_t elements = 1;  // per sample
  std::int64_t limit = 0;     // integers: fake data draws from [0, limit)
};

// A batch being assembled: per field, `rows` samples of `elements` values each (floats or
// integers, as the field says).
struct BatchData {
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<std::int32_t>> integers;

  BatchData(const std::vector<SampleField>& fields, std::int64_t rows);

  // The batch as bytes (each field's values in turn, host byte order; batch_byte_size of them)
  // for a data stream; BatchView reads them back.
  void copy_to(std::span<std::byte> bytes) const;
};

// A ready batch as the training loop reads it: per field, a read-only view of its values (floats
// or integers, the other empty), into a BatchData or straight into the bytes a data stream
// received, so a streamed batch is not copied before it reaches the step.
struct BatchView {
  std::vector<std::span<const float>> floats;
  std::vector<std::span<const std::int32_t>> integers;

  BatchView() = default;
  explicit BatchView(const BatchData& batch);
  // The fields of a batch of `rows` samples in `bytes`, as BatchData::copy_to writes them. Throws
  // std::runtime_error when `bytes` has another size or is not aligned for its values.
  BatchView(std::span<const std::byte> bytes, const std::vector<SampleField>& fields,
            std::int64_t rows);
};

// The bytes of a batch of `rows` samples (BatchData::byte_size without the batch).
std::size_t batch_byte_size(const std::vector<SampleField>& fields, std::int64_t rows);

// Samples of a dataset in a format csrun reads, by index.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  // Writes sample `index` (< size()) as read in `epoch` (dynamic masking differs per epoch) into
  // row `row` of every field of `batch`.
  virtual void read(std::int64_t index, std::int64_t epoch, std::int64_t row,
                    BatchData& batch) const = 0;
};

// The dataset a checked dataloader names: its files (MNIST IDX, the Model Zoo's GPT HDF5
// layout, BERT's CSV files, the fine-tuning heads' GLUE, NER and BertSum files), or synthetic
// samples when it is fake. Throws
// std::runtime_error naming the file and what is wrong when the data cannot be read as the model's
// fields.
std::unique_ptr<Dataset> open_dataset(const DataloaderSpec& loader,
                                      const std::vector<SampleField>& fields, std::uint64_t seed);

// The order of a dataset's samples in `epoch`: a permutation that depends on the seed and the
// epoch only (the identity without shuffling).
std::vector<std::int64_t> sample_order(std::int64_t size, std::uint64_t seed, std::int64_t epoch,
                                       bool shuffle);

// Readers of the formats (mnist_files.cpp, gpt_hdf5_files.cpp, bert_csv_files.cpp,
// bert_finetuning_files.cpp).
std::unique_ptr<Dataset> open_mnist(const DataloaderSpec& loader,
                                    const std::vector<SampleField>& fields);
std::unique_ptr<Dataset> open_gpt_hdf5(const DataloaderSpec& loader,
                                       const std::vector<SampleField>& fields);
std::unique_ptr<Dataset> open_bert_csv(const DataloaderSpec& loader,
                                       const std::vector<SampleField>& fields, std::uint64_t seed);
// The encoder-decoder networks' text (seq2seq_text_files.cpp): T5DynamicDataProcessor's
// documents, corrupted into spans, and TransformerDynamicDataProcessor's sentence pairs.
std::unique_ptr<Dataset> open_seq2seq_text(const DataloaderSpec& loader,
                                           const std::vector<SampleField>& fields,
                                           std::uint64_t seed);
// The UNet's images and masks in the Model Zoo's segmentation HDF5 layout
// (segmentation_hdf5_files.cpp).
std::unique_ptr<Dataset> open_segmentation_hdf5(const DataloaderSpec& loader,
                                                const std::vector<SampleField>& fields);
// The BERT fine-tuning heads' data (bert_finetuning_files.cpp): GLUE TSV, NER CSV, BertSum CSV.
std::unique_ptr<Dataset> open_bert_finetuning(const DataloaderSpec& loader,
                                              const std::vector<SampleField>& fields);

}  // namespace csrun::data

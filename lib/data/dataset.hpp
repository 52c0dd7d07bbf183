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

  // The batch as bytes (each field's values in turn, host byte order) for a data stream, and
  // back. copy_from throws std::runtime_error when `bytes` is not exactly byte_size() long.
  std::size_t byte_size() const;
  void copy_to(std::span<std::byte> bytes) const;
  void copy_from(std::span<const std::byte> bytes);
};

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
// layout, BERT's CSV files with dynamic masking), or synthetic samples when it is fake. Throws
// std::runtime_error naming the file and what is wrong when the data cannot be read as the model's
// fields.
std::unique_ptr<Dataset> open_dataset(const DataloaderSpec& loader,
                                      const std::vector<SampleField>& fields, std::uint64_t seed);

// The order of a dataset's samples in `epoch`: a permutation that depends on the seed and the
// epoch only (the identity without shuffling).
std::vector<std::int64_t> sample_order(std::int64_t size, std::uint64_t seed, std::int64_t epoch,
                                       bool shuffle);

// Readers of the formats (mnist_files.cpp, gpt_hdf5_files.cpp, bert_csv_files.cpp).
std::unique_ptr<Dataset> open_mnist(const DataloaderSpec& loader,
                                    const std::vector<SampleField>& fields);
std::unique_ptr<Dataset> open_gpt_hdf5(const DataloaderSpec& loader,
                                       const std::vector<SampleField>& fields);
std::unique_ptr<Dataset> open_bert_csv(const DataloaderSpec& loader,
                                       const std::vector<SampleField>& fields, std::uint64_t seed);

}  // namespace csrun::data

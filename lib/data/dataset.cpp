#include "dataset.hpp"

#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "graph/counter_rng.hpp"

namespace csrun::data {

namespace {

// Synthetic samples: a pure function of seed, field, sample and element. Masks and weights are
// all ones, so every position counts.
class FakeDataset : public Dataset {
 public:
  FakeDataset(std::vector<SampleField> fields, std::uint64_t seed, std::int64_t size)
      : fields_(std::move(fields)), seed_(seed), size_(size) {}

  std::int64_t size() const override { return size_; }

  void read(std::int64_t index, std::int64_t, std::int64_t row, BatchData& batch) const override {
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      const SampleField& field = fields_[f];
      bool ones = field.name.find("mask") != std::string::npos ||
                  field.name.find("weights") != std::string::npos;
      std::uint64_t key =
          graph::mix_keys(graph::mix_keys(seed_, f), static_cast<std::uint64_t>(index));
      for (std::int64_t e = 0; e < field.elements; ++e) {
        double u = graph::uniform01(graph::mix_keys(key, static_cast<std::uint64_t>(e)));
        auto at = static_cast<std::size_t>(row * field.elements + e);
        if (field.integer) {
          batch.integers[f][at] =
              ones ? 1
                   : static_cast<std::int32_t>(std::floor(u * static_cast<double>(field.limit)));
        } else {
          batch.floats[f][at] = ones ? 1.0f : static_cast<float>(u);
        }
      }
    }
  }

 private:
  std::vector<SampleField> fields_;
  std::uint64_t seed_;
  std::int64_t size_;
};

// Fake datasets are large enough that no run of the Model Zoo's usual lengths repeats a sample
// within an epoch.
constexpr std::int64_t kFakeSamples = 1 << 16;

std::size_t values_in_batch(const SampleField& field, std::int64_t rows) {
  return static_cast<std::size_t>(rows * field.elements);
}

}  // namespace

BatchData::BatchData(const std::vector<SampleField>& fields, std::int64_t rows) {
  for (const SampleField& field : fields) {
    std::size_t count = values_in_batch(field, rows);
    floats.emplace_back(field.integer ? 0 : count, 0.0f);
    integers.emplace_back(field.integer ? count : 0, 0);
  }
}

void BatchData::copy_to(std::span<std::byte> bytes) const {
  std::size_t at = 0;
  for (std::size_t f = 0; f < floats.size(); ++f) {
    std::span<const std::byte> field = floats[f].empty() ? std::as_bytes(std::span(integers[f]))
                                                         : std::as_bytes(std::span(floats[f]));
    std::memcpy(bytes.data() + at, field.data(), field.size());
    at += field.size();
  }
}

BatchView::BatchView(const BatchData& batch) {
  for (std::size_t f = 0; f < batch.floats.size(); ++f) {
    floats.emplace_back(batch.floats[f]);
    integers.emplace_back(batch.integers[f]);
  }
}

// Floats and 32-bit integers share one size and alignment: a batch's bytes are 4-byte values.
static_assert(sizeof(float) == sizeof(std::int32_t) && alignof(float) == alignof(std::int32_t));

BatchView::BatchView(std::span<const std::byte> bytes, const std::vector<SampleField>& fields,
                     std::int64_t rows) {
  std::size_t expected = batch_byte_size(fields, rows);
  if (bytes.size() != expected) {
    throw std::runtime_error("a batch of " + std::to_string(bytes.size()) + " bytes where " +
                             std::to_string(expected) + " were expected");
  }
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(float) != 0)
    throw std::runtime_error("a batch whose bytes are not aligned for its values");
  const std::byte* at = bytes.data();
  for (const SampleField& field : fields) {
    std::size_t count = values_in_batch(field, rows);
    floats.emplace_back(reinterpret_cast<const float*>(at), field.integer ? 0 : count);
    integers.emplace_back(reinterpret_cast<const std::int32_t*>(at), field.integer ? count : 0);
    at += count * sizeof(float);
  }
}

std::size_t batch_byte_size(const std::vector<SampleField>& fields, std::int64_t rows) {
  std::size_t bytes = 0;
  for (const SampleField& field : fields)
    bytes += values_in_batch(field, rows) * sizeof(float);
  return bytes;
}

std::unique_ptr<Dataset> open_dataset(const DataloaderSpec& loader,
                                      const std::vector<SampleField>& fields, std::uint64_t seed) {
  if (loader.fake) {
    std::uint64_t role = loader.role == LoaderRole::train ? 1 : 2;
    return std::make_unique<FakeDataset>(fields, graph::mix_keys(seed, role), kFakeSamples);
  }
  if (loader.processor == "MNISTDataProcessor") return open_mnist(loader, fields);
  if (loader.processor.starts_with("Gpt") && loader.processor.find("HDF5") != std::string::npos)
    return open_gpt_hdf5(loader, fields);
  if (loader.processor.starts_with("BertCSV")) return open_bert_csv(loader, fields, seed);
  if (loader.processor == "T5DynamicDataProcessor" ||
      loader.processor == "TransformerDynamicDataProcessor")
    return open_seq2seq_text(loader, fields, seed);
  if (loader.processor == "Hdf5DataProcessor") return open_segmentation_hdf5(loader, fields);
  if (loader.processor == "SST2DataProcessor" || loader.processor == "MNLIDataProcessor" ||
      loader.processor == "BertTokenClassifierDataProcessor" ||
      loader.processor == "BertSumCSVDataProcessor")
    return open_bert_finetuning(loader, fields);
  throw std::runtime_error("csrun does not read " + loader.processor +
                           " datasets yet; it reads MNISTDataProcessor (IDX files), the GPT "
                           "HDF5 processors, the BERT CSV processors, the fine-tuning "
                           "heads' (SST-2, MNLI, NER, BertSum), T5's and the Transformer's text, "
                           "Hdf5DataProcessor's segmentation images, or any processor with "
                           "--fake_data");
}

std::vector<std::int64_t> sample_order(std::int64_t size, std::uint64_t seed, std::int64_t epoch,
                                       bool shuffle) {
  if (shuffle)
    return graph::permutation(size, graph::mix_keys(seed, static_cast<std::uint64_t>(epoch)));
  std::vector<std::int64_t> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

}  // namespace csrun::data

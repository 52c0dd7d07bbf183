#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/schema.hpp"
#include "dataloader.hpp"

namespace csrun::data {

// What checking a dataset on disk found out.
struct DatasetFacts {
  std::optional<std::int64_t> samples;
  std::optional<std::int64_t> sequence_length;
  // The largest and smallest label or token ids the check read (it reads what is cheap: every
  // MNIST label, the first examples of a GPT HDF5 file), for the model to compare with its range.
  std::optional<IdSeen> largest_id;
  std::optional<IdSeen> smallest_id;
};

// A Model Zoo data processor: its keys and, where csrun reads its dataset format, the check
// that the files on disk are in that format.
struct ProcessorDefinition {
  std::string name;
  std::string description;
  std::shared_ptr<const config::Schema> schema;  // every key it takes, the common ones included
  // Checks the dataset on disk and says what it found.
  std::function<DatasetFacts(const DataloaderSpec&, config::Diagnostics&)> check_files;
  std::string unreadable_format;  // when check_files is empty: the format csrun does not read
};

const std::vector<ProcessorDefinition>& processor_registry();
// Stands in for a Model Zoo data processor csrun does not know when --fake_data replaces its
// data: the keys every dataloader shares are checked, the others are taken as written.
const ProcessorDefinition& unknown_processor();
const ProcessorDefinition* find_processor(std::string_view name);
std::vector<std::string> processor_names();

// Checks of the dataset layouts csrun reads (one file each).
DatasetFacts check_mnist_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics);
DatasetFacts check_gpt_hdf5_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics);
DatasetFacts check_bert_csv_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics);
DatasetFacts check_glue_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics);
DatasetFacts check_seq2seq_text_files(const DataloaderSpec& loader,
                                      config::Diagnostics& diagnostics);
DatasetFacts check_ner_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics);
DatasetFacts check_segmentation_hdf5_files(const DataloaderSpec& loader,
                                           config::Diagnostics& diagnostics);
DatasetFacts check_bertsum_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics);

}  // namespace csrun::data

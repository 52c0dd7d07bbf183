#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataloader.hpp"
#include "dataset.hpp"

namespace csrun::data {

// All a process needs to produce a dataloader's batches: the checked dataloader section, the
// fields of the model's batch, the batch size, the run's seed, and which share of each batch to
// produce: share `share` of `shares` equal parts (the rows of one replica of a num_csx run), or
// the whole batch. Batch positions count whole batches, so every share of a batch is read at the
// same position.
struct LoaderJob {
  DataloaderSpec loader;
  std::vector<SampleField> fields;
  std::int64_t batch_size = 0;
  std::uint64_t seed = 0;
  std::int64_t share = 0;
  std::int64_t shares = 1;
  // What the loader's relative paths (data_dir, vocabulary files) are relative to: the
  // coordinator's working directory for a data worker; empty: the reader's own.
  std::string directory{};

  // The samples of the job's share of a batch.
  std::int64_t rows() const { return batch_size / shares; }
  // The share's first sample's place in its batch.
  std::int64_t first_row() const { return share * rows(); }
};

// LoaderJobs as text (JSON) for data workers, and back. decode_loader_jobs throws
// std::runtime_error saying what is malformed.
std::string encode_loader_jobs(std::span<const LoaderJob> jobs);
std::vector<LoaderJob> decode_loader_jobs(std::string_view text);

}  // namespace csrun::data

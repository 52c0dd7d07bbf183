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
// fields of the model's batch, the batch size per system and the run's seed.
struct LoaderJob {
  DataloaderSpec loader;
  std::vector<SampleField> fields;
  std::int64_t batch_size = 0;
  std::uint64_t seed = 0;
};

// LoaderJobs as text (JSON) for data workers, and back. decode_loader_jobs throws
// std::runtime_error saying what is malformed.
std::string encode_loader_jobs(std::span<const LoaderJob> jobs);
std::vector<LoaderJob> decode_loader_jobs(std::string_view text);

}  // namespace csrun::data

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/diagnostics.hpp"
#include "config/node.hpp"

namespace csrun::data {

enum class LoaderRole { train, eval };

// A label or token id a dataset check read, and where: "a.h5, example 3".
struct IdSeen {
  std::int64_t id = 0;
  std::string where;
};

// A dataloader section after its data processor checked it.
struct DataloaderSpec {
  std::string processor;
  LoaderRole role = LoaderRole::train;
  std::int64_t batch_size = 0;  // global: split evenly across num_csx systems
  // CPU and GPU gradient accumulation (loop.grad_accum_steps): batch_size holds this many of the
  // written batches, one optimizer step's, each run as a micro-batch of its own.
  std::int64_t accumulated_batches = 1;
  std::optional<std::int64_t> micro_batch_size;
  std::string micro_batch_mode;  // "auto", "explore", or empty
  bool shuffle = true;
  std::optional<std::int64_t> shuffle_seed;
  std::int64_t num_workers = 0;
  bool drop_last = true;
  std::vector<std::string> data_dirs;  // with $VARS expanded
  std::optional<std::int64_t> max_sequence_length;
  bool fake = false;  // synthetic samples of the configured shapes instead of files
  std::optional<std::int64_t> samples;          // how many the files hold, when they were checked
  std::optional<std::int64_t> sequence_length;  // the sequence length the files hold
  std::optional<IdSeen> largest_id;             // see DatasetFacts
  std::optional<IdSeen> smallest_id;
  config::Node params;  // every key in normal form
  config::SourceMark mark;
  std::string path;
};

struct DataloaderContext {
  LoaderRole role = LoaderRole::train;
  std::int64_t num_csx = 1;
  bool fake_data = false;
  std::vector<std::string> model_processors;  // the processors the model reads (empty: any)
};

// A checked loader's key as text (`fallback` when absent) or as a flag (false when absent).
std::string loader_text(const DataloaderSpec& loader, std::string_view key, std::string fallback);
bool loader_flag(const DataloaderSpec& loader, std::string_view key);

// Whether the loader's samples say which of two evaluation sets each comes from (is_matched,
// is_mismatched): MNLI's evaluation reads dev_matched.tsv and dev_mismatched.tsv.
bool has_matched_partitions(const DataloaderSpec& loader);

// What a split of a system's batch of `batch` samples may use, for messages: "its divisors (1, 2,
// 3, 6)", or "a divisor of 1040" where they are many.
std::string divisors_text(std::int64_t batch);

// Checks a dataloader section: its processor (matched to the model), every key, the batch
// against num_csx and micro_batch_size, and (unless the data is fake) that the files are
// there in the layout the processor reads.
std::optional<DataloaderSpec> check_dataloader(const config::Node& loader,
                                               const DataloaderContext& context,
                                               config::Diagnostics& diagnostics);

}  // namespace csrun::data

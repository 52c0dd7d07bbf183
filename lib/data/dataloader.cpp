#include "dataloader.hpp"

#include <algorithm>

#include "config/spelling.hpp"
#include "data_paths.hpp"
#include "processor_registry.hpp"

namespace csrun::data {

namespace {

using config::Diagnostics;
using config::Node;

std::string bullet_list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += "\n- " + name;
  return text;
}

const ProcessorDefinition* resolve_processor(const Node& loader, const DataloaderContext& context,
                                             Diagnostics& diagnostics) {
  const std::vector<std::string> allowed =
      context.model_processors.empty() ? processor_names() : context.model_processors;
  const Node* name = loader.find("data_processor");
  if (!name || name->is_null()) {
    if (allowed.size() == 1) return find_processor(allowed.front());
    diagnostics.error(loader.mark(), loader.path(),
                      "Data Processor config must have a `data_processor` key with one of the "
                      "following values:" +
                          bullet_list(allowed));
    return nullptr;
  }
  if (!name->is_string()) {
    diagnostics.error(name->mark(), name->path(),
                      "expected the name of a data processor; found " + name->describe());
    return nullptr;
  }
  const std::string& wanted = name->as_string();
  if (context.fake_data && !find_processor(wanted) &&
      !config::closest_match(wanted, processor_names())) {
    diagnostics.warning(name->mark(), name->path(),
                        "csrun does not know the data processor " + wanted +
                            ": --fake_data supplies the batches, and its keys other than "
                            "batch_size, micro_batch_size, shuffle and num_workers are not "
                            "checked");
    return &unknown_processor();
  }
  if (std::find(allowed.begin(), allowed.end(), wanted) == allowed.end()) {
    diagnostics.error(
        name->mark(), name->path(),
        "Expected data_processor to be one of the following values:" + bullet_list(allowed) +
            "\nGot: " + wanted + config::did_you_mean(wanted, allowed));
    return nullptr;
  }
  return find_processor(wanted);
}

// A message lists at most this many divisors of a share.
constexpr std::size_t kListedDivisors = 12;
// Beyond this, the divisors are not searched for a message.
constexpr std::int64_t kMaxListedBatch = std::int64_t{1} << 40;

void check_batch(DataloaderSpec& spec, const DataloaderContext& context, Diagnostics& diagnostics) {
  const Node* batch = spec.params.find("batch_size");
  std::int64_t num_csx = context.num_csx;
  if (spec.batch_size < num_csx || spec.batch_size % num_csx != 0) {
    diagnostics.error(batch->mark(), batch->path(),
                      "batch_size is the global batch, split evenly across num_csx = " +
                          std::to_string(num_csx) + " systems: it requires the global batch size " +
                          std::to_string(spec.batch_size) + " to be divisible by num_csx");
    return;
  }
  std::int64_t per_system = spec.batch_size / num_csx;
  const Node* micro = spec.params.find("micro_batch_size");
  if (!micro || micro->is_null()) return;
  if (micro->is_string()) {
    spec.micro_batch_mode = micro->as_string();
    return;
  }
  std::int64_t size = micro->as_int();
  if (size > per_system || per_system % size != 0) {
    diagnostics.error(micro->mark(), micro->path(),
                      "micro_batch_size " + std::to_string(size) +
                          " must divide the batch each system receives, batch_size / num_csx = " +
                          std::to_string(spec.batch_size) + " / " + std::to_string(num_csx) +
                          " = " + std::to_string(per_system) + ": give " +
                          divisors_text(per_system) + ", auto or explore");
    return;
  }
  spec.micro_batch_size = size;
}

// Every step of the wafer, and of csrun, takes a whole batch: an epoch's samples beyond its last
// whole batch are not read, whatever drop_last says.
void note_partial_batch(const DataloaderSpec& spec, Diagnostics& diagnostics) {
  if (spec.drop_last || !spec.samples || spec.batch_size < 1) return;
  std::int64_t left = *spec.samples % spec.batch_size;
  if (left == 0) return;
  const Node* at = spec.params.find("drop_last");
  if (!at) at = spec.params.find("drop_last_batch");
  diagnostics.warning(at->mark(), at->path(),
                      "false has no effect: every step takes a whole batch, so the last " +
                          std::to_string(left) + " of the " + std::to_string(*spec.samples) +
                          " samples of each epoch are not read (batch_size " +
                          std::to_string(spec.batch_size) + ")");
}

void read_drop_last(DataloaderSpec& spec, Diagnostics& diagnostics) {
  const Node* drop_last = spec.params.find("drop_last");
  const Node* drop_last_batch = spec.params.find("drop_last_batch");
  if (drop_last && drop_last_batch && !drop_last->same_value(*drop_last_batch)) {
    diagnostics.error(drop_last_batch->mark(), drop_last_batch->path(),
                      "drop_last_batch and drop_last are the same setting and disagree; keep one");
  }
  const Node* chosen = drop_last ? drop_last : drop_last_batch;
  spec.drop_last = chosen ? chosen->as_bool() : true;
}

void read_data_dirs(DataloaderSpec& spec, Diagnostics& diagnostics) {
  const Node* data_dir = spec.params.find("data_dir");
  const Node* mixture = spec.params.find("mixture");
  if (data_dir && mixture) {
    diagnostics.error(mixture->mark(), mixture->path(),
                      "Only one of `data_dir` or `mixture` must be specified.");
    return;
  }
  if (data_dir) {
    spec.data_dirs = expand_paths(*data_dir, diagnostics);
    return;
  }
  if (!mixture) {
    if (spec.processor == "GptHDF5MapDataProcessor") {
      diagnostics.error(spec.mark, spec.path,
                        "Only one of `data_dir` or `mixture` must be specified.");
    }
    return;
  }
  for (const Node& part : mixture->items()) {
    const Node* dir = part.find("data_dir");
    if (!dir) {
      diagnostics.error(part.mark(), part.path(), "each mixture entry needs a data_dir");
      continue;
    }
    for (const std::string& path : expand_paths(*dir, diagnostics))
      spec.data_dirs.push_back(path);
  }
}

}  // namespace

std::optional<DataloaderSpec> check_dataloader(const Node& loader, const DataloaderContext& context,
                                               Diagnostics& diagnostics) {
  if (!loader.is_map()) return std::nullopt;
  const ProcessorDefinition* definition = resolve_processor(loader, context, diagnostics);
  if (!definition) return std::nullopt;
  Diagnostics findings;
  DataloaderSpec spec;
  const Node* processor_name = loader.find("data_processor");
  spec.processor =
      definition == &unknown_processor() ? processor_name->as_string() : definition->name;
  spec.role = context.role;
  spec.mark = loader.mark();
  spec.path = loader.path();
  spec.params = definition->schema->check(loader, findings);
  bool keys_valid = !findings.has_errors();
  diagnostics.append(findings);
  if (!spec.params.contains("batch_size")) return std::nullopt;
  spec.batch_size = spec.params.find("batch_size")->as_int();
  spec.shuffle = spec.params.find("shuffle")->as_bool();
  if (const Node* seed = spec.params.find("shuffle_seed"); seed && seed->is_int()) {
    spec.shuffle_seed = seed->as_int();
  }
  spec.num_workers = spec.params.find("num_workers")->as_int();
  if (const Node* msl = spec.params.find("max_sequence_length"))
    spec.max_sequence_length = msl->as_int();
  const Node* use_fake = spec.params.find("use_fake_data");
  spec.fake = context.fake_data || (use_fake && use_fake->as_bool());
  read_drop_last(spec, diagnostics);
  check_batch(spec, context, diagnostics);
  read_data_dirs(spec, diagnostics);
  if (spec.fake || !keys_valid) return spec;
  if (definition->check_files) {
    DatasetFacts facts = definition->check_files(spec, diagnostics);
    spec.samples = facts.samples;
    spec.sequence_length = facts.sequence_length;
    spec.largest_id = facts.largest_id;
    spec.smallest_id = facts.smallest_id;
    note_partial_batch(spec, diagnostics);
  } else {
    diagnostics.error(spec.mark, spec.path,
                      "csrun has no reader for " + definition->name + " (" +
                          definition->unreadable_format +
                          "); check the rest of the config with --fake_data");
  }
  return spec;
}

std::string loader_text(const DataloaderSpec& loader, std::string_view key, std::string fallback) {
  const config::Node* node = loader.params.find(key);
  return node && node->is_string() ? node->as_string() : fallback;
}

bool loader_flag(const DataloaderSpec& loader, std::string_view key) {
  const config::Node* node = loader.params.find(key);
  return node && node->is_bool() && node->as_bool();
}

std::string divisors_text(std::int64_t batch) {
  std::string many = "a divisor of " + std::to_string(batch);
  if (batch > kMaxListedBatch) return many;
  std::vector<std::int64_t> low, high;  // d and batch / d, d up to the square root
  for (std::int64_t d = 1; d <= batch / d; ++d) {
    if (batch % d != 0) continue;
    low.push_back(d);
    if (d != batch / d) high.push_back(batch / d);
  }
  if (low.size() + high.size() > kListedDivisors) return many;
  low.insert(low.end(), high.rbegin(), high.rend());
  std::string text = "its divisors (";
  for (std::size_t i = 0; i < low.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(low[i]);
  return text + ")";
}

}  // namespace csrun::data

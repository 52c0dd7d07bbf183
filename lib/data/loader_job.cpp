#include "loader_job.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "config/yaml_reader.hpp"
#include "config/yaml_writer.hpp"

namespace csrun::data {

namespace {

using nlohmann::json;

json optional_int(const std::optional<std::int64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

std::optional<std::int64_t> read_optional_int(const json& value) {
  if (value.is_null()) return std::nullopt;
  return value.get<std::int64_t>();
}

json encode_job(const LoaderJob& job) {
  const DataloaderSpec& loader = job.loader;
  json fields = json::array();
  for (const SampleField& field : job.fields)
    fields.push_back({{"name", field.name},
                      {"integer", field.integer},
                      {"elements", field.elements},
                      {"limit", field.limit}});
  return {{"processor", loader.processor},
          {"role", loader.role == LoaderRole::train ? "train" : "eval"},
          {"loader_batch_size", loader.batch_size},
          {"shuffle", loader.shuffle},
          {"shuffle_seed", optional_int(loader.shuffle_seed)},
          {"drop_last", loader.drop_last},
          {"data_dirs", loader.data_dirs},
          {"max_sequence_length", optional_int(loader.max_sequence_length)},
          {"fake", loader.fake},
          {"params", config::to_yaml(loader.params)},
          {"path", loader.path},
          {"fields", fields},
          {"batch_size", job.batch_size},
          {"seed", job.seed},
          {"share", job.share},
          {"shares", job.shares},
          {"directory", job.directory}};
}

LoaderJob decode_job(const json& in) {
  LoaderJob job;
  DataloaderSpec& loader = job.loader;
  loader.processor = in.at("processor").get<std::string>();
  loader.role = in.at("role").get<std::string>() == "train" ? LoaderRole::train : LoaderRole::eval;
  loader.batch_size = in.at("loader_batch_size").get<std::int64_t>();
  loader.shuffle = in.at("shuffle").get<bool>();
  loader.shuffle_seed = read_optional_int(in.at("shuffle_seed"));
  loader.drop_last = in.at("drop_last").get<bool>();
  loader.data_dirs = in.at("data_dirs").get<std::vector<std::string>>();
  loader.max_sequence_length = read_optional_int(in.at("max_sequence_length"));
  loader.fake = in.at("fake").get<bool>();
  loader.path = in.at("path").get<std::string>();
  config::Diagnostics diagnostics;
  loader.params = config::read_yaml_text(in.at("params").get<std::string>(),
                                         "the dataloader "
                                         "section a coordinator sent",
                                         diagnostics);
  if (diagnostics.has_errors()) throw std::runtime_error("its dataloader section is not YAML");
  for (const json& field : in.at("fields"))
    job.fields.push_back({field.at("name").get<std::string>(), field.at("integer").get<bool>(),
                          field.at("elements").get<std::int64_t>(),
                          field.at("limit").get<std::int64_t>()});
  job.batch_size = in.at("batch_size").get<std::int64_t>();
  job.seed = in.at("seed").get<std::uint64_t>();
  job.share = in.at("share").get<std::int64_t>();
  job.shares = in.at("shares").get<std::int64_t>();
  job.directory = in.at("directory").get<std::string>();
  if (job.batch_size <= 0) throw std::runtime_error("its batch size is not positive");
  if (job.shares <= 0 || job.batch_size % job.shares != 0 || job.share < 0 ||
      job.share >= job.shares) {
    throw std::runtime_error("share " + std::to_string(job.share) + " of " +
                             std::to_string(job.shares) + " is not a share of a batch of " +
                             std::to_string(job.batch_size));
  }
  for (const SampleField& field : job.fields)
    if (field.elements <= 0) throw std::runtime_error("field " + field.name + " has no elements");
  return job;
}

}  // namespace

std::string encode_loader_jobs(std::span<const LoaderJob> jobs) {
  json out = json::array();
  for (const LoaderJob& job : jobs)
    out.push_back(encode_job(job));
  return out.dump();
}

std::vector<LoaderJob> decode_loader_jobs(std::string_view text) {
  try {
    json in = json::parse(text);
    if (!in.is_array()) throw std::runtime_error("not a list of dataloaders");
    std::vector<LoaderJob> jobs;
    for (const json& job : in)
      jobs.push_back(decode_job(job));
    return jobs;
  } catch (const std::exception& error) {  // json::exception, or a value out of range
    throw std::runtime_error(std::string("malformed dataloader description: ") + error.what());
  }
}

}  // namespace csrun::data

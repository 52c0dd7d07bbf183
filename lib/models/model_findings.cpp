#include "model_definitions.hpp"

namespace csrun::models {

namespace {

config::SourceMark mark_of(const ModelParams& params, const std::string& key) {
  const config::Node* value = params.find(key);
  return value ? value->mark() : params.node().mark();
}

std::string path_of(const ModelParams& params, const std::string& key) {
  const config::Node* value = params.find(key);
  return value ? value->path() : config::join_path(params.node().path(), key);
}

}  // namespace

void report_at(const ModelParams& params, const std::string& key, const std::string& message,
               config::Diagnostics& diagnostics) {
  diagnostics.error(mark_of(params, key), path_of(params, key), message);
}

void warn_at(const ModelParams& params, const std::string& key, const std::string& message,
             config::Diagnostics& diagnostics) {
  diagnostics.warning(mark_of(params, key), path_of(params, key), message);
}

}  // namespace csrun::models

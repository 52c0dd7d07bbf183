#include "model_build.hpp"

namespace csrun::models {

const graph::Tensor& ModelBuild::input(const std::string& name) const {
  auto found = batch.find(name);
  if (found == batch.end()) throw std::invalid_argument("the batch has no field '" + name + "'");
  return found->second;
}

void refuse_if_set(const ModelParams& params, const std::string& model,
                   std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (params.has(key)) {
      throw UnsupportedModel(
          key, std::string(key) + " is not supported yet by csrun's " + model + " builder");
    }
  }
}

void refuse_unless(const ModelParams& params, const std::string& model, const char* key,
                   bool supported, const std::string& supported_values) {
  if (supported) return;
  const config::Node* value = params.find(key);
  throw UnsupportedModel(key, std::string(key) + " " + (value ? value->render() : "") +
                                  " is not supported yet by csrun's " + model +
                                  " builder (supported: " + supported_values + ")");
}

namespace {

bool is_off(const config::Node& value) {
  if (value.is_null()) return true;
  if (value.is_bool()) return !value.as_bool();
  if (value.is_number()) return value.as_number() == 0.0;
  if (value.is_list()) return value.items().empty();
  if (value.is_map()) return value.entries().empty();
  return value.as_string() == "default";
}

}  // namespace

void refuse_unless_off(const ModelParams& params, const std::string& model,
                       std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const config::Node* value = params.find(key);
    if (!value || is_off(*value)) continue;
    throw UnsupportedModel(key, std::string(key) + " " + value->render() +
                                    " is not supported yet by csrun's " + model + " builder");
  }
}

}  // namespace csrun::models

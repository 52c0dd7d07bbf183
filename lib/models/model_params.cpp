#include "model_params.hpp"

#include <stdexcept>

namespace csrun::models {

const config::Node& ModelParams::required(std::string_view key) const {
  const config::Node* value = params_.find(key);
  if (!value || value->is_null()) {
    throw std::logic_error("model parameter '" + std::string(key) + "' has no value");
  }
  return *value;
}

std::int64_t ModelParams::integer(std::string_view key) const {
  return required(key).as_int();
}

double ModelParams::number(std::string_view key) const {
  return required(key).as_number();
}

bool ModelParams::flag(std::string_view key) const {
  return required(key).as_bool();
}

std::string ModelParams::text(std::string_view key) const {
  return required(key).as_string();
}

bool ModelParams::has(std::string_view key) const {
  const config::Node* value = params_.find(key);
  return value && !value->is_null();
}

}  // namespace csrun::models

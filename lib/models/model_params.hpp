#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/node.hpp"

namespace csrun::models {

// A model's params after its schema checked them: every key present with its default, so the
// accessors only ask for keys the schema declares.
class ModelParams {
 public:
  ModelParams() = default;
  explicit ModelParams(config::Node params) : params_(std::move(params)) {}

  std::int64_t integer(std::string_view key) const;
  double number(std::string_view key) const;
  bool flag(std::string_view key) const;
  std::string text(std::string_view key) const;
  // Present and not null.
  bool has(std::string_view key) const;
  const config::Node* find(std::string_view key) const { return params_.find(key); }
  const config::Node& node() const { return params_; }

 private:
  const config::Node& required(std::string_view key) const;

  config::Node params_ = config::Node::make_map();
};

}  // namespace csrun::models

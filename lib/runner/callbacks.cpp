#include "callbacks.hpp"

#include <stdexcept>

namespace csrun::runner {

namespace {

std::map<std::string, CallbackFactory, std::less<>>& registry() {
  static std::map<std::string, CallbackFactory, std::less<>> factories;
  return factories;
}

}  // namespace

void register_callback(const std::string& name, CallbackFactory factory) {
  registry()[name] = std::move(factory);
}

bool has_callback(std::string_view name) {
  return registry().find(name) != registry().end();
}

std::unique_ptr<Callback> make_callback(std::string_view name, const config::Node& params) {
  auto found = registry().find(name);
  if (found == registry().end())
    throw std::invalid_argument("no callback named '" + std::string(name) + "' is registered");
  return found->second(params);
}

}  // namespace csrun::runner

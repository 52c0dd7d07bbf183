#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics.hpp"
#include "run_spec.hpp"
#include "schema.hpp"

namespace csrun::config {

// One class a params file may name: an optimizer, LR scheduler, callback or logger.
struct ClassEntry {
  std::string name;
  std::shared_ptr<const Schema> params;
  std::vector<std::string> required;  // keys without which the class cannot be built
  std::string no_effect_note;         // non-empty: accepted, but csrun does nothing with it
};

// The classes of one kind, looked up by name case-insensitively (as the Model Zoo does),
// optionally ignoring a suffix ("Linear" finds "LinearLR").
class ClassCatalog {
 public:
  // `null_disables`: {ClassName: null} turns the class off (callbacks); otherwise null means {}.
  ClassCatalog(std::string kind, std::vector<ClassEntry> entries, std::string optional_suffix = {},
               bool null_disables = false);

  const std::string& kind() const { return kind_; }
  const ClassEntry* find(std::string_view name) const;
  std::vector<std::string> names() const;

  // Reads {ClassName: {params}}; reports a malformed entry, an unknown class, missing required
  // parameters and bad parameter values. `null` params mean {} (or "disabled" for callbacks).
  std::optional<ClassSpec> read(const Node& node, Diagnostics& diagnostics) const;
  // Checks params given separately from the name (the legacy format's flat sections).
  std::optional<ClassSpec> read(const std::string& name, const Node& name_node, const Node& params,
                                Diagnostics& diagnostics) const;

 private:
  std::string kind_;
  std::vector<ClassEntry> entries_;
  std::string optional_suffix_;
  bool null_disables_;
};

const ClassCatalog& optimizer_catalog();
const ClassCatalog& scheduler_catalog();
const ClassCatalog& callback_catalog();
const ClassCatalog& logger_catalog();

}  // namespace csrun::config

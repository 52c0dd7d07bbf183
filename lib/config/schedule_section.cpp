#include <algorithm>

#include "trainer_sections.hpp"

namespace csrun::config {

namespace {

const Node* find_param(const ClassSpec& spec, const char* key) {
  return spec.params.find(key);
}

void read_members(ClassSpec& spec, Diagnostics& diagnostics);

std::optional<ClassSpec> read_scheduler(const Node& node, Diagnostics& diagnostics) {
  std::optional<ClassSpec> spec = scheduler_catalog().read(node, diagnostics);
  if (spec && (spec->type == "SequentialLR" || spec->type == "ChainedScheduler")) {
    read_members(*spec, diagnostics);
  }
  return spec;
}

// SequentialLR switches schedules at milestones: the cumulative total_iters of every member
// but the last. Given milestones must agree.
void check_milestones(ClassSpec& spec, Diagnostics& diagnostics) {
  Node computed = Node::make_list(spec.params.mark(), join_path(spec.path, "milestones"));
  std::int64_t total = 0;
  for (std::size_t i = 0; i + 1 < spec.children.size(); ++i) {
    const Node* iters = find_param(spec.children[i], "total_iters");
    if (!iters) {
      const ClassEntry* entry = scheduler_catalog().find(spec.children[i].type);
      bool reported = std::find(entry->required.begin(), entry->required.end(), "total_iters") !=
                      entry->required.end();
      if (reported) return;  // its missing total_iters is already an error
      diagnostics.error(spec.children[i].mark, spec.children[i].path,
                        spec.children[i].type + " is followed by another schedule in " + spec.type +
                            ", so it needs total_iters (the step at which the next "
                            "one takes over)");
      return;
    }
    total += iters->as_int();
    computed.push_back(Node::make_int(total));
  }
  const Node* given = find_param(spec, "milestones");
  if (given && !given->same_value(computed)) {
    diagnostics.error(given->mark(), given->path(),
                      "Expected " + spec.type + " to have milestones " + computed.render() +
                          ", but got " + given->render());
    return;
  }
  spec.params.set("milestones", std::move(computed));
}

void read_members(ClassSpec& spec, Diagnostics& diagnostics) {
  const Node* members = find_param(spec, "schedulers");
  if (!members) return;
  for (const Node& member : members->items()) {
    if (auto child = read_scheduler(member, diagnostics))
      spec.children.push_back(std::move(*child));
  }
  if (spec.type == "SequentialLR" && spec.children.size() == members->items().size()) {
    check_milestones(spec, diagnostics);
  }
}

}  // namespace

std::optional<ClassSpec> read_optimizer(const Node& optimizer, Diagnostics& diagnostics) {
  std::optional<ClassSpec> spec = optimizer_catalog().read(optimizer, diagnostics);
  if (!spec) return spec;
  const Node* lr = spec->params.find("lr");
  const Node* learning_rate = spec->params.find("learning_rate");
  if (lr && learning_rate) {
    diagnostics.error(
        lr->mark(), lr->path(),
        "lr and learning_rate are the same parameter of " + spec->type + "; give only one");
  } else if (lr) {
    spec->params.set("learning_rate", *lr);
    spec->params.take("lr");
  }
  return spec;
}

std::vector<ClassSpec> read_schedulers(const Node& schedulers, Diagnostics& diagnostics) {
  std::vector<ClassSpec> result;
  if (schedulers.is_null()) return result;
  if (schedulers.is_map()) {
    if (auto spec = read_scheduler(schedulers, diagnostics)) result.push_back(std::move(*spec));
    return result;
  }
  if (!schedulers.is_list()) {
    diagnostics.error(schedulers.mark(), schedulers.path(),
                      "expected a list of schedulers ({ClassName: {parameters}}); found " +
                          schedulers.describe());
    return result;
  }
  for (const Node& item : schedulers.items()) {
    if (auto spec = read_scheduler(item, diagnostics)) result.push_back(std::move(*spec));
  }
  return result;
}

std::vector<ClassSpec> read_class_list(const Node& list, const ClassCatalog& catalog,
                                       Diagnostics& diagnostics) {
  std::vector<ClassSpec> result;
  if (list.is_null()) return result;
  if (!list.is_list()) {
    diagnostics.error(list.mark(), list.path(),
                      "expected a list of " + catalog.kind() +
                          "s ({ClassName: {parameters}}); "
                          "found " +
                          list.describe());
    return result;
  }
  for (const Node& item : list.items()) {
    if (auto spec = catalog.read(item, diagnostics)) result.push_back(std::move(*spec));
  }
  return result;
}

}  // namespace csrun::config

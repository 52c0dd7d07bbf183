#include <algorithm>
#include <sstream>

#include "trainer_sections.hpp"

namespace csrun::config {

namespace {

const Node* find_param(const ClassSpec& spec, const char* key) {
  return spec.params.find(key);
}

void read_members(ClassSpec& spec, Diagnostics& diagnostics);

// The Model Zoo's CyclicLR takes its scale mode from mode (per cycle for triangular and
// triangular2, per step for exp_range), and only exp_range reads gamma.
void check_cyclic(const ClassSpec& spec, Diagnostics& diagnostics) {
  const Node* mode = spec.params.find("mode");
  bool exp_range = mode && mode->is_string() && mode->as_string() == "exp_range";
  std::string implied = exp_range ? "iterations" : "cycle";
  const Node::Entry* scale_mode = spec.params.find_entry("scale_mode");
  if (scale_mode && scale_mode->value.is_string() && scale_mode->value.as_string() != implied) {
    diagnostics.warning(scale_mode->key_mark, scale_mode->value.path(),
                        "scale_mode has no effect: CyclicLR scales mode " +
                            (mode ? mode->render() : std::string("'triangular'")) + " per " +
                            (exp_range ? "step ('iterations')" : "cycle ('cycle')"));
  }
  const Node::Entry* gamma = spec.params.find_entry("gamma");
  if (gamma && !exp_range) {
    diagnostics.warning(gamma->key_mark, gamma->value.path(),
                        "gamma has no effect: only CyclicLR's mode 'exp_range' reads it");
  }
}

// OneCycleLR's phases end at steps pct_start x total_steps - 1, (2 x pct_start x total_steps
// - 2 with three_phase) and total_steps - 1; a phase that does not end after the one before
// would divide the closed form by zero.
void check_one_cycle(const ClassSpec& spec, Diagnostics& diagnostics) {
  double total = spec.params.number_or("total_steps", 1000.0);
  double pct = spec.params.number_or("pct_start", 0.3);
  std::string problem;
  if (pct * total <= 1.0) {
    std::ostringstream product;
    product << pct * total;
    problem = "its first phase is empty: pct_start x total_steps must exceed 1 (it is " +
              product.str() + ")";
  } else if (!spec.params.flag_or("three_phase", false) && pct >= 1.0) {
    problem = "its second phase is empty: pct_start must be below 1";
  } else if (spec.params.flag_or("three_phase", false) && 2.0 * pct * total - 1.0 >= total) {
    problem =
        "its third phase is empty: with three_phase, 2 x pct_start x total_steps must stay "
        "below total_steps + 1";
  }
  if (!problem.empty()) diagnostics.error(spec.mark, spec.path, "OneCycleLR: " + problem);
}

std::optional<ClassSpec> read_scheduler(const Node& node, Diagnostics& diagnostics) {
  std::optional<ClassSpec> spec = scheduler_catalog().read(node, diagnostics);
  if (!spec) return spec;
  if (spec->type == "SequentialLR" || spec->type == "ChainedScheduler")
    read_members(*spec, diagnostics);
  if (spec->type == "CyclicLR") check_cyclic(*spec, diagnostics);
  if (spec->type == "OneCycleLR") check_one_cycle(*spec, diagnostics);
  if (spec->type == "LambdaLR") {
    diagnostics.note(spec->mark, spec->path,
                     "the Model Zoo's LambdaLR has fixed functions: its rate at step s is "
                     "initial_learning_rate^2 x s/30 x 0.95^s (0 at step 0)");
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

void check_cycle_length(const std::vector<ClassSpec>& schedulers, const LoopSpec& loop,
                        Diagnostics& diagnostics) {
  std::optional<std::int64_t> steps = loop.max_steps ? loop.max_steps : loop.num_steps;
  if (!steps) return;
  for (const ClassSpec& scheduler : schedulers) {
    if (scheduler.type != "OneCycleLR") continue;
    auto total = static_cast<std::int64_t>(scheduler.params.number_or("total_steps", 1000.0));
    if (total >= *steps) continue;
    const Node* strategy = scheduler.params.find("anneal_strategy");
    bool linear = strategy && strategy->is_string() && strategy->as_string() == "linear";
    diagnostics.warning(scheduler.mark, scheduler.path,
                        "OneCycleLR's cycle of total_steps " + std::to_string(total) +
                            " ends before the run's " + std::to_string(*steps) +
                            " steps; past it the Model Zoo's closed form, which csrun follows, " +
                            (linear ? "keeps falling, below the final rate and then below 0"
                                    : "rises again toward max_lr") +
                            " (set total_steps to the run's steps)");
  }
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

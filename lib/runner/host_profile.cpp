#include "host_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <utility>

#include "compiler/host_lowering.hpp"
#include "compiler/kernel_matching.hpp"
#include "graph/flops.hpp"

namespace csrun::runner {

namespace {

constexpr std::size_t kClassesShown = 6;
constexpr std::size_t kLongestShown = 5;

std::string formatted(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// What a host step's time counts under in the summary: "gemm", "chain", or a node step's op.
std::string step_class(const compiler::Plan& plan, const compiler::HostStep& step) {
  if (step.kind != compiler::HostStepKind::node) return compiler::host_step_kind_name(step.kind);
  return graph::op_name(plan.graph.node(step.nodes.back()).op);
}

double step_flops(const compiler::Plan& plan, const compiler::HostStep& step) {
  double flops = 0.0;
  for (const std::vector<graph::NodeId>* ids : {&step.nodes, &step.folded, &step.sums}) {
    for (graph::NodeId id : *ids)
      flops += graph::node_flops(plan.graph, plan.graph.node(id));
  }
  return flops;
}

const compiler::Kernel& kernel_of(const compiler::Plan& plan, const compiler::HostStep& step) {
  return plan.kernels.at(static_cast<std::size_t>(step.kernel));
}

// The host steps a program's runs timed: those of kernels that run in the step, not at load.
std::vector<std::size_t> timed_steps(const compiler::Plan& plan) {
  std::vector<std::size_t> timed;
  for (std::size_t i = 0; i < plan.host_steps.size(); ++i) {
    if (!kernel_of(plan, plan.host_steps[i]).at_load) timed.push_back(i);
  }
  return timed;
}

double share_of(double seconds, double total) {
  return total > 0.0 ? 100.0 * seconds / total : 0.0;
}

std::string classes_line(const ProfiledProgram& program) {
  const compiler::Plan& plan = *program.plan;
  const runtime::Executable::HostProfile& profile = program.profile;
  std::map<std::string, double> by_class;
  for (std::size_t i : timed_steps(plan))
    by_class[step_class(plan, plan.host_steps[i])] += profile.seconds[i];
  std::vector<std::pair<std::string, double>> classes(by_class.begin(), by_class.end());
  std::stable_sort(classes.begin(), classes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  double in_steps = std::accumulate(profile.seconds.begin(), profile.seconds.end(), 0.0);
  auto runs = static_cast<double>(profile.runs);
  std::string line = "Host profile of the " + program.name + " step (" +
                     std::to_string(profile.runs) + (profile.runs == 1 ? " run" : " runs") +
                     " timed): " + formatted("%.4g", profile.run_seconds / runs) + " s a run:";
  double shown = 0.0;
  for (std::size_t c = 0; c < classes.size() && c < kClassesShown; ++c) {
    line += (c > 0 ? ", " : " ") + classes[c].first + " " +
            formatted("%.1f", share_of(classes[c].second, profile.run_seconds)) + " %";
    shown += classes[c].second;
  }
  if (classes.size() > kClassesShown)
    line += ", others " + formatted("%.1f", share_of(in_steps - shown, profile.run_seconds)) + " %";
  line += ", between host steps " +
          formatted("%.1f", share_of(profile.run_seconds - in_steps, profile.run_seconds)) + " %.";
  if (profile.chains_in_registers > 0)
    line +=
        " Chains in registers: " + std::to_string(profile.chains_in_registers) + ", " +
        std::to_string(profile.chains_compiled) + " of them compiled" +
        (profile.chains_compiled > 0 ? " to " + std::string(profile.chains_compiled_to) + " code."
                                     : " (interpreted).");
  return line;
}

std::vector<std::string> longest_lines(const ProfiledProgram& program) {
  const compiler::Plan& plan = *program.plan;
  const runtime::Executable::HostProfile& profile = program.profile;
  std::vector<std::size_t> order = timed_steps(plan);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return profile.seconds[a] > profile.seconds[b];
  });
  auto runs = static_cast<double>(profile.runs);
  std::vector<std::string> lines;
  for (std::size_t n = 0; n < order.size() && n < kLongestShown; ++n) {
    const compiler::HostStep& step = plan.host_steps[order[n]];
    const graph::Node& node = plan.graph.node(step.nodes.back());
    double seconds = profile.seconds[order[n]] / runs;
    std::string line = "  k" + std::to_string(step.kernel) + " " + kernel_of(plan, step).name +
                       " (" + compiler::host_step_call(step) + " " + graph::op_name(node.op) +
                       ", " + graph::phase_name(node.phase);
    const std::string& scope = plan.graph.scope_name(node.scope);
    if (!scope.empty()) line += ", " + scope;
    line += "): " + formatted("%.4g", seconds) + " s, " +
            formatted("%.1f", share_of(seconds * runs, profile.run_seconds)) + " %";
    double flops = step_flops(plan, step);
    if (flops > 0.0 && seconds > 0.0)
      line += ", " + formatted("%.1f", flops / seconds / 1e9) + " GFLOP/s";
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::string host_profile_table(std::span<const ProfiledProgram> programs) {
  std::ostringstream text;
  text << "program\tkernel\tname\tcall\tphase\tscope\tnode\truns\tseconds\tshare\tgflop\t"
          "gflop_per_s\n";
  for (const ProfiledProgram& program : programs) {
    const runtime::Executable::HostProfile& profile = program.profile;
    if (profile.runs == 0) continue;
    const compiler::Plan& plan = *program.plan;
    auto runs = static_cast<double>(profile.runs);
    for (std::size_t i : timed_steps(plan)) {
      const compiler::HostStep& step = plan.host_steps[i];
      graph::NodeId node_id = step.nodes.back();
      const graph::Node& node = plan.graph.node(node_id);
      double seconds = profile.seconds[i] / runs;
      double gflop = step_flops(plan, step) / 1e9;
      text << program.name << '\t' << step.kernel << '\t' << kernel_of(plan, step).name << '\t'
           << compiler::host_step_call(step) << '\t' << graph::phase_name(node.phase) << '\t'
           << plan.graph.scope_name(node.scope) << '\t'
           << compiler::node_signature(plan.graph, node_id) << '\t' << profile.runs << '\t'
           << formatted("%.9f", seconds) << '\t'
           << formatted("%.2f", share_of(profile.seconds[i], profile.run_seconds)) << '\t'
           << formatted("%.9f", gflop) << '\t'
           << formatted("%.3f", seconds > 0.0 ? gflop / seconds : 0.0) << '\n';
    }
  }
  return text.str();
}

std::vector<std::string> host_profile_summary(std::span<const ProfiledProgram> programs) {
  std::vector<std::string> lines;
  for (const ProfiledProgram& program : programs) {
    if (program.profile.runs == 0) {
      lines.push_back("Host profile of the " + program.name +
                      " step: not timed (it ran once; a program's first run, which touches its "
                      "memory first, is left out).");
      continue;
    }
    lines.push_back(classes_line(program));
    std::vector<std::string> longest = longest_lines(program);
    lines.push_back("The longest host steps of the " + program.name + " step:");
    lines.insert(lines.end(), longest.begin(), longest.end());
  }
  return lines;
}

}  // namespace csrun::runner

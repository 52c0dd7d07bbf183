#include "executable.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>

#include "compiler/scratch_layout.hpp"
#include "elementwise_chain.hpp"
#include "kernel_set.hpp"
#include "storage/host_memory.hpp"
#include "storage/page_aligned.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

namespace {

using graph::NodeId;

std::int64_t round_up(std::int64_t bytes) {
  return (bytes + compiler::kBufferAlignment - 1) / compiler::kBufferAlignment *
         compiler::kBufferAlignment;
}

// Zeroed, page-aligned memory from the kernel (storage::allocate_pages), freed with its owner.
// Its pages are zero without a pass over them and are faulted in where the step (or the
// variables' initialization, on every core) first touches them: a memset here took 5.7 s of
// GPT-2 small's start-up on a machine where a fresh page costs about a microsecond.
class AlignedBytes {
 public:
  AlignedBytes() = default;
  explicit AlignedBytes(std::int64_t bytes) : size_(round_up(std::max<std::int64_t>(bytes, 1))) {
    auto length = static_cast<std::size_t>(size_);
    data_ = std::unique_ptr<std::byte, Unmap>(
        static_cast<std::byte*>(storage::allocate_pages(length)), Unmap{length});
  }
  std::byte* data() const { return data_.get(); }
  std::int64_t size() const { return size_; }

 private:
  struct Unmap {
    std::size_t bytes;
    void operator()(std::byte* memory) const { storage::free_pages(memory, bytes); }
  };
  std::unique_ptr<std::byte, Unmap> data_;
  std::int64_t size_ = 0;
};

std::int64_t value_bytes_of(const TensorRef& value) {
  return value.count * static_cast<std::int64_t>(graph::dtype_size(value.dtype));
}

TensorRef tensor_at(std::byte* data, const graph::TensorType& type, NodeId id) {
  if (type.shape.size() > static_cast<std::size_t>(kMaxRank)) {
    throw std::invalid_argument("node %" + std::to_string(id) + " has rank " +
                                std::to_string(type.shape.size()) +
                                "; the runtime supports up to " + std::to_string(kMaxRank));
  }
  TensorRef ref;
  ref.data = data;
  ref.dtype = type.dtype;
  ref.rank = static_cast<int>(type.shape.size());
  std::copy(type.shape.begin(), type.shape.end(), ref.shape.begin());
  ref.count = graph::element_count(type.shape);
  return ref;
}

// A persistent value copied aside before the variables change: an update that is another
// variable's old value, or an output that names a variable.
struct Snapshot {
  TensorRef source;
  std::byte* copy = nullptr;
};

struct Update {
  TensorRef source;  // a temporary, or a snapshot
  TensorRef variable;
};

// A kernel's work in the step: one node, or a chain of elementwise nodes run chunk by chunk.
using StepWork = std::variant<NodeTask, ElementwiseChain>;

// A parameter's 16-bit copy (graph::VariableRole::half_copy): the step's update keeps it; a write
// to the parameter from outside the step makes it stale until the next step starts.
struct HalfCopy {
  NodeId parameter = -1;
  TensorRef parameter_value;
  TensorRef copy;
  bool stale = true;
};

struct NamedValue {
  std::string name;
  NodeId node = -1;
  TensorRef value;  // outputs that name a variable read its snapshot
  bool writable = false;
  bool borrowed = false;  // a variable read (or a sum added to) where its owner keeps it
};

}  // namespace

struct Executable::State {
  compiler::Plan plan;
  const KernelSet& kernels;
  AlignedBytes arena;
  AlignedBytes scratch;
  // The largest scratch a kernel's task needs, shared; its pages are touched only when a kernel
  // uses them (an eval step's stay untouched while training runs).
  AlignedBytes task_scratch_memory;
  TaskScratch task_scratch;
  std::vector<TensorRef> values;  // per node: where its value lives
  std::vector<bool> chunk_local;  // per node: whether its chain keeps it one chunk at a time
  std::vector<bool> borrowed;     // per node: a variable kept where its owner keeps it
  std::vector<StepWork> step;
  std::vector<std::size_t> step_host;  // per work of the step: its entry of plan.host_steps
  // The first work of the step that writes an f32 variable of this executable's own (or
  // step.size(): none does; the updates taken after the step write them).
  std::size_t first_f32_variable_write = 0;
  std::vector<Snapshot> snapshots;
  std::vector<Update> updates;
  std::vector<HalfCopy> half_copies;
  std::vector<NamedValue> named;
  std::unordered_map<std::string, Slot> slots;
  std::int64_t steps = 0;
  bool profiling = false;
  HostProfile profile;
  mutable ThreadTeam team{ThreadTeam::available_cores()};  // shared by the tasks, which run it

  State(compiler::Plan source, const KernelSet& chosen, State* owner = nullptr)
      : plan(std::move(source)), kernels(chosen) {
    check_memory_plan();
    std::vector<NodeId> from_owner;
    std::vector<NodeId> sums;
    if (owner != nullptr) {
      from_owner = compiler::variables_read_from(plan, owner->plan);
      sums = compiler::sums_kept_by(plan, owner->plan);
    }
    check_fits_host(compiler::variable_bytes(plan, from_owner) +
                    compiler::variable_bytes(plan, sums));
    arena = AlignedBytes(plan.memory.peak_bytes);
    values.resize(plan.graph.size());
    bind_buffers();
    borrowed.assign(plan.graph.size(), false);
    if (owner != nullptr) {
      borrow_variables(*owner, from_owner);
      sum_into_owner(*owner, sums);
    }
    mark_chunk_local();
    bind_scratch();
    bind_updates();
    bind_half_copies();
    name_values();
    fill_static_leaves();
    bind_kernels();
    first_f32_variable_write = find_first_f32_variable_write();
    profile.seconds.assign(plan.host_steps.size(), 0.0);
    count_chains_in_registers();
  }

  void count_chains_in_registers() {
    profile.chains_compiled_to = chain_isa_name(kernels.compiled_chains);
    for (const StepWork& work : step) {
      if (const auto* chain = std::get_if<ElementwiseChain>(&work)) {
        profile.chains_in_registers += chain->in_registers();
        profile.chains_compiled += chain->compiled();
        continue;
      }
      const NodeTask& task = std::get<NodeTask>(work);
      for (const RowChain* chain : {&task.row_chain, &task.softmax_chain}) {
        profile.chains_in_registers += static_cast<bool>(*chain);
        profile.chains_compiled += chain->compiled.has_value();
      }
    }
  }

  // Refused with the figures before allocating, not an allocation failure (or the kernel's OOM
  // killer) once the arena is in use. Variables read where an owner keeps them take nothing here.
  void check_fits_host(std::int64_t borrowed_bytes) const {
    auto needed = static_cast<double>(
        compiler::step_host_bytes(plan, kernels.multiplies_bf16(), team.size()) - borrowed_bytes);
    if (!storage::exceeds_usable_memory(needed)) return;
    std::string sample = compiler::sample_size_name(plan);
    std::string lower =
        plan.batch_size > 1 ? "the batch size or " + sample : sample + ": one sample does not fit";
    throw std::runtime_error("the step's memory plan needs " + storage::memory_size(needed) +
                             " of host memory (its arena and scratch), more than " +
                             storage::usable_memory_text() + ": lower " + lower);
  }

  void check_memory_plan() const {
    const compiler::MemoryPlan& memory = plan.memory;
    if (memory.buffer_of.size() != plan.graph.size()) {
      throw std::invalid_argument("the plan's memory plan covers " +
                                  std::to_string(memory.buffer_of.size()) +
                                  " values, its graph has " + std::to_string(plan.graph.size()));
    }
    for (std::size_t i = 0; i < memory.buffer_of.size(); ++i) {
      std::int32_t index = memory.buffer_of[i];
      if (index < 0) continue;
      const compiler::Buffer& buffer = memory.buffers.at(static_cast<std::size_t>(index));
      std::int64_t needed = plan.graph.nodes()[i].type.byte_size();
      if (buffer.offset < 0 || buffer.bytes < needed ||
          buffer.bytes > memory.peak_bytes - buffer.offset) {
        throw std::invalid_argument("the plan's buffer for node %" + std::to_string(i) +
                                    " lies outside its arena of " +
                                    std::to_string(memory.peak_bytes) + " bytes");
      }
    }
  }

  void bind_buffers() {
    const graph::Graph& graph = plan.graph;
    for (std::size_t i = 0; i < graph.size(); ++i) {
      std::int32_t index = plan.memory.buffer_of[i];
      if (index < 0) continue;
      std::int64_t offset = plan.memory.buffers[static_cast<std::size_t>(index)].offset;
      values[i] = tensor_at(arena.data() + offset, graph.nodes()[i].type, static_cast<NodeId>(i));
    }
  }

  // `variables` (compiler::variables_read_from) read where `owner` keeps them: their buffers in
  // this arena are never touched, so they take no memory.
  void borrow_variables(const State& owner, std::span<const NodeId> variables) {
    for (NodeId id : variables) {
      const std::string& name = plan.graph.leaf_name(id);
      values[static_cast<std::size_t>(id)] =
          owner.values[static_cast<std::size_t>(owner.plan.graph.find_variable(name)->node)];
      borrowed[static_cast<std::size_t>(id)] = true;
    }
  }

  // `sums` (compiler::sums_kept_by) added to where `owner` reads them: the sum and its new value
  // computed in place lie in the owner's input; any other value in the sum's buffer would be
  // written nowhere, so a plan that puts one there is refused.
  void sum_into_owner(State& owner, std::span<const NodeId> sums) {
    const std::vector<std::int32_t>& buffer_of = plan.memory.buffer_of;
    for (NodeId id : sums) {
      const std::string& name = plan.graph.leaf_name(id);
      TensorRef target = owner.values[static_cast<std::size_t>(*owner.plan.graph.find_input(name))];
      NodeId update = update_of(name);
      std::int32_t buffer = buffer_of[static_cast<std::size_t>(id)];
      if (buffer < 0)
        throw std::invalid_argument("the plan has no buffer for the sum '" + name + "'");
      for (std::size_t i = 0; i < buffer_of.size(); ++i) {
        if (buffer_of[i] != buffer) continue;
        if (static_cast<NodeId>(i) != id && static_cast<NodeId>(i) != update) {
          throw std::invalid_argument("the plan keeps node %" + std::to_string(i) +
                                      " in the buffer of the sum '" + name + "'");
        }
        values[i] = target;
      }
      borrowed[static_cast<std::size_t>(id)] = true;
    }
  }

  bool is_borrowed(NodeId id) const { return borrowed[static_cast<std::size_t>(id)]; }

  // Whether `host` computes `id` a chunk or a row at a time: a chain's node, a row chain's, the
  // softmax_grad whose rows a row chain reads, a softmax whose rows are only rounded, or the
  // softmax a softmax_grad computes.
  static bool computes_by_parts(const compiler::HostStep& host, NodeId id) {
    auto in = [id](const std::vector<NodeId>& ids) {
      return std::find(ids.begin(), ids.end(), id) != ids.end();
    };
    if (host.kind == compiler::HostStepKind::chain) return in(host.nodes);
    if (host.kind != compiler::HostStepKind::node) return false;
    bool by_rows = !host.row_chain.empty() || host.rounded >= 0 || host.row_softmax >= 0 ||
                   host.upstream_dropout >= 0;
    return in(host.row_chain) || in(host.softmax_chain) || id == host.row_softmax ||
           id == host.dropout || id == host.upstream_dropout ||
           (by_rows && id == host.nodes.front());
  }

  // A chain's chunk-local values have no memory here (the chain keeps their chunks, a row chain
  // its rows): the plan may name only values its step computes that have no buffer.
  void mark_chunk_local() {
    chunk_local.assign(plan.graph.size(), false);
    for (const compiler::HostStep& host : plan.host_steps) {
      for (NodeId id : host.chunk_local) {
        bool computed = computes_by_parts(host, id);
        if (!computed || values[static_cast<std::size_t>(id)].data != nullptr)
          throw std::invalid_argument("the plan keeps node %" + std::to_string(id) +
                                      " per chunk, but it is not a value its chain computes "
                                      "without a buffer");
        chunk_local[static_cast<std::size_t>(id)] = true;
        values[static_cast<std::size_t>(id)] = tensor_at(nullptr, plan.graph.node(id).type, id);
      }
    }
  }

  // The region the compiler laid out for values that live inside one kernel and for the
  // snapshots (Plan::scratch).
  void bind_scratch() {
    const compiler::ScratchLayout& layout = plan.scratch;
    scratch = AlignedBytes(layout.region_bytes());
    for (const compiler::ScratchLayout::Place& place : layout.kernel_values)
      values[static_cast<std::size_t>(place.node)] =
          tensor_at(scratch.data() + place.offset, plan.graph.node(place.node).type, place.node);
    for (const compiler::ScratchLayout::Place& place : layout.snapshots)
      snapshots.push_back(
          Snapshot{values[static_cast<std::size_t>(place.node)], scratch.data() + place.offset});
    std::vector<bool> without_place = compiler::values_without_place(plan);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i].data == nullptr && !without_place[i] &&
          graph::op_class(plan.graph.nodes()[i].op) != graph::OpClass::leaf)
        throw std::invalid_argument("node %" + std::to_string(i) +
                                    " has neither a buffer nor a kernel in the plan");
    }
  }

  // Whether the update's value was computed straight into its variable's buffer.
  bool in_place(const graph::NamedNode& update) const {
    const graph::Variable* variable = plan.graph.find_variable(update.name);
    return plan.memory.buffer_of[static_cast<std::size_t>(update.node)] ==
           plan.memory.buffer_of[static_cast<std::size_t>(variable->node)];
  }

  TensorRef snapshot_of(NodeId id) const {
    TensorRef value = values[static_cast<std::size_t>(id)];
    for (const Snapshot& taken : snapshots) {
      if (taken.source.data == value.data) value.data = taken.copy;
    }
    return value;
  }

  void bind_updates() {
    const graph::Graph& graph = plan.graph;
    for (const graph::NamedNode& update : graph.updates()) {
      if (in_place(update)) continue;
      TensorRef variable = values[static_cast<std::size_t>(graph.find_variable(update.name)->node)];
      updates.push_back(Update{snapshot_of(update.node), variable});
    }
  }

  // The node that `variable` takes as its value after the step, or -1.
  NodeId update_of(const std::string& variable) const {
    for (const graph::NamedNode& update : plan.graph.updates()) {
      if (update.name == variable) return update.node;
    }
    return -1;
  }

  // A copy stays its parameter rounded only when each step that updates the parameter rounds its
  // new value into the copy (a step that does not update it leaves both as they are); a plan that
  // does not is refused.
  void check_kept(const graph::Variable& copy) const {
    NodeId value = update_of(copy.name);
    NodeId parameter_value = update_of(copy.copy_of);
    if (value < 0 && parameter_value < 0) return;
    const graph::Node* node = value < 0 ? nullptr : &plan.graph.node(value);
    if (node == nullptr || node->op != graph::OpKind::cast ||
        node->inputs.front() != parameter_value) {
      throw std::invalid_argument("the plan keeps '" + copy.name + "', a 16-bit copy of '" +
                                  copy.copy_of + "', but its step does not round the new '" +
                                  copy.copy_of + "' into it");
    }
  }

  void bind_half_copies() {
    const graph::Graph& graph = plan.graph;
    for (const graph::Variable& variable : graph.variables()) {
      if (variable.role != graph::VariableRole::half_copy) continue;
      check_kept(variable);
      NodeId parameter = graph.find_variable(variable.copy_of)->node;
      half_copies.push_back(HalfCopy{parameter, values[static_cast<std::size_t>(parameter)],
                                     values[static_cast<std::size_t>(variable.node)]});
    }
  }

  // Rounds each stale copy from its parameter with the cast kernels' rounding (the same bits the
  // step's update gives it).
  void refresh_half_copies() {
    for (HalfCopy& half : half_copies) {
      if (!half.stale) continue;
      const TensorRef& copy = half.copy;
      split_rows(&team, copy.count, copy.count, [&](std::int64_t first, std::int64_t last) {
        kernels.narrow(half.parameter_value.f32() + first, copy.half() + first, last - first,
                       copy.dtype);
      });
      half.stale = false;
    }
  }

  void add_name(const std::string& name, NodeId node, TensorRef value, bool writable) {
    slots.emplace(name, static_cast<Slot>(named.size()));
    named.push_back(
        NamedValue{name, node, value, writable && !is_borrowed(node), is_borrowed(node)});
  }

  void name_values() {
    const graph::Graph& graph = plan.graph;
    for (const graph::NamedNode& input : graph.inputs())
      add_name(input.name, input.node, values[static_cast<std::size_t>(input.node)], true);
    for (const graph::Variable& variable : graph.variables())
      add_name(variable.name, variable.node, values[static_cast<std::size_t>(variable.node)],
               variable.role != graph::VariableRole::half_copy);
    for (const graph::NamedNode& output : graph.outputs())
      add_name(output.name, output.node, snapshot_of(output.node), false);
  }

  // The task of node `id`, or of the host step `host` that starts with it (a GEMM's operands and
  // result, a softmax's rounded copy), prepared once its operands are bound.
  NodeTask task_for(NodeId id, const compiler::HostStep* host = nullptr) {
    NodeTask task;
    task.node = &plan.graph.node(id);
    task.out = values[static_cast<std::size_t>(id)];
    task.team = &team;
    for (NodeId input : task.node->inputs)
      task.in.push_back(values[static_cast<std::size_t>(input)]);
    if (host != nullptr && host->kind == compiler::HostStepKind::gemm) bind_gemm(task, *host);
    if (host != nullptr && host->rounded >= 0) bind_rounded(task, *host);
    if (host != nullptr && host->upstream_dropout >= 0) bind_upstream_dropout(task, *host);
    if (host != nullptr && !host->row_chain.empty()) bind_row_chain(task, *host);
    if (host != nullptr && host->row_softmax >= 0) bind_row_softmax(task, *host);
    kernels.prepare(task);
    if (task.scratch_floats > task_scratch.floats) {
      task_scratch_memory =
          AlignedBytes(task.scratch_floats * static_cast<std::int64_t>(sizeof(float)));
      task_scratch = {reinterpret_cast<float*>(task_scratch_memory.data()), task.scratch_floats};
    }
    if (task.scratch_floats > 0) task.scratch = &task_scratch;
    return task;
  }

  void fill_static_leaves() {
    const graph::Graph& graph = plan.graph;
    for (std::size_t i = 0; i < graph.size(); ++i) {
      graph::OpKind op = graph.nodes()[i].op;
      if (op != graph::OpKind::constant && op != graph::OpKind::iota) continue;
      if (values[i].data == nullptr) continue;
      NodeTask task = task_for(static_cast<NodeId>(i));
      kernels.run(task);
    }
  }

  // The plan's host steps: those of kernels that compute static values run now, once; the others
  // become the step. Every node of a kernel is run or folded by a step.
  void bind_kernels() {
    check_host_steps_cover_kernels();
    for (const compiler::HostStep& host : plan.host_steps) {
      bool at_load = plan.kernels[static_cast<std::size_t>(host.kernel)].at_load;
      if (host.kind == compiler::HostStepKind::chain) {
        std::vector<NodeTask> tasks;
        for (NodeId id : host.nodes)
          tasks.push_back(task_for(id));
        std::vector<NodeTask> sums;
        for (NodeId id : host.sums)
          sums.push_back(task_for(id));
        ElementwiseChain chain(std::move(tasks), host.nodes, host.chunk_local, std::move(sums),
                               host.in_registers, kernels, team);
        if (at_load) {
          chain.run();
        } else {
          add_to_step(std::move(chain), host);
        }
        continue;
      }
      if (host.in_registers)
        throw std::invalid_argument("the plan runs kernel k" + std::to_string(host.kernel) + "'s " +
                                    compiler::host_step_kind_name(host.kind) +
                                    " step in registers: only chains run there");
      check_reads_stored(host);
      NodeTask task = task_for(host.nodes.front(), &host);
      if (at_load) {
        kernels.run(task);
      } else {
        add_to_step(std::move(task), host);
      }
    }
  }

  // The memory plan gives a kernel result a variable's buffer only where it is the variable's new
  // value computed in place (a view shares the buffer but writes nothing).
  std::size_t find_first_f32_variable_write() const {
    std::vector<bool> writes(plan.graph.size(), false);
    for (const graph::NamedNode& update : plan.graph.updates()) {
      if (in_place(update) && plan.graph.node(update.node).type.dtype == graph::DType::f32 &&
          !is_borrowed(plan.graph.find_variable(update.name)->node))
        writes[static_cast<std::size_t>(update.node)] = true;
    }
    auto written = [&](NodeId id) { return writes[static_cast<std::size_t>(id)]; };
    for (std::size_t i = 0; i < step.size(); ++i) {
      const compiler::HostStep& host = plan.host_steps[step_host[i]];
      for (const std::vector<NodeId>* ids :
           {&host.nodes, &host.folded, &host.sums, &host.row_chain})
        if (std::any_of(ids->begin(), ids->end(), written)) return i;
    }
    return step.size();
  }

  void add_to_step(StepWork work, const compiler::HostStep& host) {
    step.push_back(std::move(work));
    step_host.push_back(static_cast<std::size_t>(&host - plan.host_steps.data()));
  }

  // A GEMM reads a folded transpose's source with the transposed flag and writes its product
  // where the plan says (a folded bias add's result, each row starting as the bias).
  void bind_gemm(NodeTask& task, const compiler::HostStep& host) const {
    task.in[0] = values[static_cast<std::size_t>(host.operand_a)];
    task.in[1] = values[static_cast<std::size_t>(host.operand_b)];
    task.transposed = {host.transposed_a, host.transposed_b};
    task.out = values[static_cast<std::size_t>(host.result)];
    if (host.bias >= 0) task.addend = values[static_cast<std::size_t>(host.bias)];
    if (host.windows >= 0) bind_windows(task, host);
    if (host.windows_sum >= 0) bind_windows_sum(task, host);
  }

  // A GEMM sums its product onto the windows it is the gradient of, the step's f32 result: one
  // matrix op(a) for all the products, each product's m rows a window offset of C of the result's
  // lead indices (m = C * K) and its n columns the windows' positions.
  void bind_windows_sum(NodeTask& task, const compiler::HostStep& host) const {
    const graph::Node& sum = plan.graph.node(host.windows_sum);
    const graph::Shape& product = task.node->type.shape;
    const graph::Shape& extents = sum.attrs.shape;
    const TensorRef& out = task.out;
    auto axes = static_cast<int>(extents.size());
    bool valid = sum.op == graph::OpKind::windows_sum && host.result == host.windows_sum &&
                 host.windows < 0 && out.dtype == graph::DType::f32 && out.rank > axes &&
                 axes > 0 && product.size() >= 2 && task.in[0].rank == 2 &&
                 graph::is_floating(task.node->type.dtype) &&
                 graph::is_floating(task.in[0].dtype) && graph::is_floating(task.in[1].dtype);
    std::int64_t positions = 1;
    std::int64_t count = 1;
    std::int64_t leads = 1;
    for (int a = 0; valid && a < out.rank; ++a) {
      int window_axis = a - (out.rank - axes);
      if (window_axis < 0) {
        leads *= out.dim(a);
        continue;
      }
      std::int64_t extent = extents[static_cast<std::size_t>(window_axis)];
      valid = extent > 0 && out.dim(a) >= extent;
      positions *= out.dim(a) - extent + 1;
      count *= extent;
    }
    if (valid) {
      std::int64_t m = product.end()[-2];
      std::int64_t n = product.back();
      std::int64_t products = graph::element_count(product) / std::max<std::int64_t>(m * n, 1);
      std::int64_t k = task.in[0].count / std::max<std::int64_t>(m, 1);
      valid = n == positions && m % count == 0 && products * (m / count) == leads &&
              task.in[0].dim(task.transposed[0] ? 1 : 0) == m && task.in[0].count == m * k &&
              task.in[1].count == products * k * n && host.windows_tile > 0 &&
              host.windows_tile <= n;
    }
    if (!valid)
      throw std::invalid_argument(
          "kernel k" + std::to_string(host.kernel) + " sums its product onto the windows of %" +
          std::to_string(host.windows_sum) +
          ": only an f32 windows_sum of a product of one matrix by each of its operand b's, "
          "shaped as the windows' gradient");
    task.windows = extents;
    task.windows_tile = host.windows_tile;
    task.sums_windows = true;
  }

  // A GEMM forms the windows it reads from their source, operand b: the matrices it reads must be
  // the windows' values, of operand a's floating type, as the matmul's shapes take them.
  void bind_windows(NodeTask& task, const compiler::HostStep& host) const {
    const graph::Node& windows = plan.graph.node(host.windows);
    const graph::Shape& shape = windows.type.shape;
    const TensorRef& a = task.in[0];
    const TensorRef& out = task.out;
    std::int64_t k = a.dim(task.transposed[0] ? a.rank - 2 : a.rank - 1);
    std::int64_t n = out.dim(out.rank - 1);
    std::int64_t columns = task.transposed[1] ? k : n;
    std::int64_t matrices = out.count / std::max<std::int64_t>(out.dim(out.rank - 2) * n, 1);
    auto axes = static_cast<std::ptrdiff_t>(windows.attrs.shape.size());
    bool valid = windows.op == graph::OpKind::windows && windows.inputs[0] == host.operand_b &&
                 host.windows_tile > 0 && host.windows_tile <= columns &&
                 windows.type.dtype == a.dtype && graph::is_floating(a.dtype) &&
                 graph::is_floating(out.dtype) && std::ssize(shape) > axes &&
                 graph::element_count(graph::Shape(shape.end() - axes, shape.end())) == columns &&
                 matrices * k * n == graph::element_count(shape);
    if (!valid)
      throw std::invalid_argument("kernel k" + std::to_string(host.kernel) +
                                  " forms the windows %" + std::to_string(host.windows) +
                                  " for its product: only windows of its operand b, of operand a's "
                                  "floating type and shaped as the product reads them");
    task.windows = windows.attrs.shape;
    task.windows_tile = host.windows_tile;
  }

  // A softmax writes its rows rounded into its result's folded cast as well (a softmax_grad, those
  // of the softmax it computes), or into the cast of its folded dropout, dropped out.
  void bind_rounded(NodeTask& task, const compiler::HostStep& host) const {
    NodeId softmax = host.row_softmax >= 0 ? host.row_softmax : host.nodes.front();
    const graph::Node& node = plan.graph.node(softmax);
    const graph::Node& cast = plan.graph.node(host.rounded);
    NodeId copied = host.dropout >= 0 ? host.dropout : softmax;
    if (node.op != graph::OpKind::softmax || node.type.dtype != graph::DType::f32 ||
        cast.op != graph::OpKind::cast || cast.inputs[0] != copied ||
        !graph::is_half(cast.type.dtype) ||
        (host.dropout >= 0 && !drops_out(host.dropout, softmax)))
      throw std::invalid_argument(
          "kernel k" + std::to_string(host.kernel) + " rounds into %" +
          std::to_string(host.rounded) +
          (host.dropout >= 0 ? " through %" + std::to_string(host.dropout) : std::string()) +
          ": only an f32 softmax writes a 16-bit cast of its result, or of an f32 dropout of it");
    task.rounded = values[static_cast<std::size_t>(host.rounded)];
    if (host.dropout >= 0) task.dropout = dropout_ref(host.dropout);
  }

  DropoutRef dropout_ref(NodeId id) const {
    const graph::Node& node = plan.graph.node(id);
    return {&node, values[static_cast<std::size_t>(node.inputs[0])],
            values[static_cast<std::size_t>(node.inputs[1])]};
  }

  // A softmax_grad computes its upstream operand, a dropout of a stored value, a few rows at a
  // time as it reads them.
  void bind_upstream_dropout(NodeTask& task, const compiler::HostStep& host) const {
    const graph::Node& dropout = plan.graph.node(host.upstream_dropout);
    if (task.node->op != graph::OpKind::softmax_grad ||
        task.node->inputs[1] != host.upstream_dropout || dropout.op != graph::OpKind::dropout ||
        dropout.type != task.node->type ||
        plan.graph.node(dropout.inputs[0]).type != task.node->type)
      throw std::invalid_argument(
          "kernel k" + std::to_string(host.kernel) + " drops out node %" +
          std::to_string(host.nodes.front()) + "'s upstream as node %" +
          std::to_string(host.upstream_dropout) + " (" + graph::op_name(dropout.op) +
          "): only a softmax_grad drops out its upstream operand, an f32 dropout of its shape");
    task.upstream_dropout = dropout_ref(host.upstream_dropout);
  }

  // Whether node `id` is a dropout of `softmax`, of its type.
  bool drops_out(NodeId id, NodeId softmax) const {
    const graph::Node& dropout = plan.graph.node(id);
    return dropout.op == graph::OpKind::dropout && dropout.inputs[0] == softmax &&
           dropout.type == plan.graph.node(softmax).type;
  }

  // A softmax or softmax_grad runs its row chain over the rows it computes: a softmax's chain
  // computes its input, written where its result goes; a softmax_grad's reads its result.
  void bind_row_chain(NodeTask& task, const compiler::HostStep& host) {
    bool softmax = task.node->op == graph::OpKind::softmax;
    if (!compiler::runs_row_chain(*task.node) ||
        (softmax && host.row_chain.back() != task.node->inputs.front()))
      throw std::invalid_argument(
          "kernel k" + std::to_string(host.kernel) + " runs a row chain with node %" +
          std::to_string(host.nodes.front()) + " (" + graph::op_name(task.node->op) +
          "): a row chain runs with an f32 softmax along its last axis, whose input its last "
          "node computes, or an f32 softmax_grad along its last axis");
    NodeId row_value = softmax ? -1 : host.nodes.front();
    NodeId row_result = softmax ? host.row_chain.back() : -1;
    task.row_chain = row_chain_for(task, host, host.row_chain, row_value, row_result);
  }

  // A softmax_grad computes its y operand, a softmax it alone reads (but for its rounded copy), a
  // few rows at a time, through the softmax's input chain: the softmax is never stored.
  void bind_row_softmax(NodeTask& task, const compiler::HostStep& host) {
    const graph::Node& softmax = plan.graph.node(host.row_softmax);
    bool valid =
        task.node->op == graph::OpKind::softmax_grad &&
        task.node->inputs.front() == host.row_softmax && softmax.op == graph::OpKind::softmax &&
        compiler::runs_row_chain(softmax) &&
        (host.softmax_chain.empty() || host.softmax_chain.back() == softmax.inputs.front());
    if (!valid)
      throw std::invalid_argument(
          "kernel k" + std::to_string(host.kernel) + " computes node %" +
          std::to_string(host.row_softmax) + " (" + graph::op_name(softmax.op) + ") for node %" +
          std::to_string(host.nodes.front()) + " (" + graph::op_name(task.node->op) +
          "): only a softmax_grad computes its y operand, an f32 softmax along its last axis, "
          "whose input the softmax's chain computes");
    task.computes_softmax = true;
    task.softmax_input = values[static_cast<std::size_t>(softmax.inputs.front())];
    if (host.softmax_chain.empty()) return;
    task.softmax_chain =
        row_chain_for(task, host, host.softmax_chain, -1, host.softmax_chain.back());
  }

  // The program of a row chain over the rows of `task` (ChainProgram: `row_value`, `row_result`),
  // and its compiled code where chains compile here.
  RowChain row_chain_for(const NodeTask& task, const compiler::HostStep& host,
                         const std::vector<NodeId>& chain, NodeId row_value, NodeId row_result) {
    std::vector<NodeTask> tasks;
    for (NodeId id : chain)
      tasks.push_back(task_for(id));
    if (tasks.front().out.count != task.out.count)
      throw std::invalid_argument(
          "kernel k" + std::to_string(host.kernel) + "'s row chain computes " +
          std::to_string(tasks.front().out.count) + " values, its %" +
          std::to_string(host.nodes.front()) + " " + std::to_string(task.out.count) +
          ": a row chain runs over the rows of its softmax");
    RowChain row_chain{std::make_shared<const ChainProgram>(
                           row_chain_program(tasks, chain, row_value, row_result)),
                       std::nullopt};
    // Its runs start at whole rows.
    std::int64_t width = task.out.rank == 0 ? 1 : task.out.shape[task.out.rank - 1];
    if (chains_compiled_here())
      row_chain.compiled = CompiledChain::compile(*row_chain.program, task.out.count, width,
                                                  kernels.compiled_chains);
    return row_chain;
  }

  // Outside its chain, a chunk-local value has no memory to read (a softmax's input its row chain
  // computes is read from the rows it writes, a softmax_grad's dropped-out upstream from the rows
  // the step drops out).
  void check_reads_stored(const compiler::HostStep& host) const {
    NodeId reader = host.nodes.front();
    std::vector<NodeId> read = plan.graph.node(reader).inputs;
    read.insert(read.end(), {host.operand_a, host.operand_b, host.bias});
    for (NodeId id : read) {
      bool computed_by_rows =
          std::find(host.row_chain.begin(), host.row_chain.end(), id) != host.row_chain.end() ||
          (id >= 0 && (id == host.row_softmax || id == host.upstream_dropout));
      if (id >= 0 && chunk_local[static_cast<std::size_t>(id)] && !computed_by_rows)
        throw std::invalid_argument("node %" + std::to_string(reader) + " reads %" +
                                    std::to_string(id) +
                                    ", which the plan keeps only per chunk of its chain");
    }
  }

  void check_host_steps_cover_kernels() const {
    std::vector<bool> covered(plan.graph.size(), false);
    for (const compiler::HostStep& host : plan.host_steps) {
      for (const std::vector<NodeId>* ids : {&host.nodes, &host.folded, &host.sums}) {
        for (NodeId id : *ids)
          covered[static_cast<std::size_t>(id)] = true;
      }
      if (host.kind != compiler::HostStepKind::node) continue;  // only a node step runs one
      for (const std::vector<NodeId>* ids : {&host.row_chain, &host.softmax_chain}) {
        for (NodeId id : *ids)
          covered[static_cast<std::size_t>(id)] = true;
      }
    }
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
      for (NodeId id : plan.kernels[k].nodes) {
        if (!covered[static_cast<std::size_t>(id)])
          throw std::invalid_argument("node %" + std::to_string(id) + " of kernel " +
                                      std::to_string(k) + " has no host step in the plan");
      }
    }
  }

  void run(const std::function<void()>& before_f32_variables_change) {
    if (profiling && steps > 0) {
      run_timed(before_f32_variables_change);
    } else {
      refresh_half_copies();
      for (std::size_t i = 0; i < step.size(); ++i) {
        before_work(i, before_f32_variables_change);
        run_work(step[i]);
      }
      before_work(step.size(), before_f32_variables_change);
      take_updates();
    }
    ++steps;
  }

  // Calls `hook` where work `i` of the step (step.size(): the updates taken after it) is the
  // first to write an f32 variable; whether it is.
  bool before_work(std::size_t i, const std::function<void()>& hook) const {
    if (i != first_f32_variable_write) return false;
    if (hook) hook();
    return true;
  }

  void run_work(StepWork& work) {
    if (auto* chain = std::get_if<ElementwiseChain>(&work)) {
      chain->run();
    } else {
      kernels.run(std::get<NodeTask>(work));
    }
  }

  void take_updates() {
    for (const Snapshot& taken : snapshots) {
      std::memcpy(taken.copy, taken.source.data,
                  static_cast<std::size_t>(value_bytes_of(taken.source)));
    }
    for (const Update& update : updates) {
      std::memcpy(update.variable.data, update.source.data,
                  static_cast<std::size_t>(value_bytes_of(update.variable)));
    }
  }

  // A run that adds each host step's seconds to the profile.
  void run_timed(const std::function<void()>& before_f32_variables_change) {
    using Clock = std::chrono::steady_clock;
    auto seconds = [](Clock::duration elapsed) {
      return std::chrono::duration<double>(elapsed).count();
    };
    Clock::time_point started = Clock::now();
    refresh_half_copies();
    Clock::time_point last = Clock::now();
    for (std::size_t i = 0; i < step.size(); ++i) {
      if (before_work(i, before_f32_variables_change))
        last = Clock::now();  // a wait in the hook is not the kernel's
      run_work(step[i]);
      Clock::time_point now = Clock::now();
      profile.seconds[step_host[i]] += seconds(now - last);
      last = now;
    }
    before_work(step.size(), before_f32_variables_change);
    take_updates();
    profile.run_seconds += seconds(Clock::now() - started);
    ++profile.runs;
  }

  const NamedValue& value(Slot slot) const { return named.at(static_cast<std::size_t>(slot)); }

  void mark_copies_stale(NodeId parameter) {
    for (HalfCopy& half : half_copies) {
      if (half.parameter == parameter) half.stale = true;
    }
  }

  // The value of an input or variable about to be written from outside the step; copies of it
  // become stale.
  const TensorRef& writable(Slot slot, std::size_t count) {
    const NamedValue& target = value(slot);
    const std::string& name = target.name;
    if (!target.writable) {
      if (target.borrowed) {
        const graph::Variable* variable = plan.graph.find_variable(name);
        bool sum = variable != nullptr && variable->role == graph::VariableRole::gradient_sum;
        throw std::invalid_argument("'" + name +
                                    (sum ? "' is added to where the step that reads it keeps it"
                                         : "' is read where the step that updates it keeps it") +
                                    "; write it there");
      }
      // The other variables not written from outside are the 16-bit copies.
      const graph::Variable* copy = plan.graph.find_variable(name);
      if (copy != nullptr) {
        throw std::invalid_argument("'" + name + "' is the 16-bit copy of '" + copy->copy_of +
                                    "' that the step keeps; write '" + copy->copy_of + "'");
      }
      throw std::invalid_argument(
          "'" + name + "' is an output of the step; only inputs and variables are written");
    }
    if (static_cast<std::int64_t>(count) != target.value.count) {
      throw std::invalid_argument("'" + name + "' is " +
                                  plan.graph.node(target.node).type.to_string() + " (" +
                                  std::to_string(target.value.count) + " elements); " +
                                  std::to_string(count) + " values were given");
    }
    mark_copies_stale(target.node);
    return target.value;
  }
};

Executable::Executable(compiler::Plan plan, std::string_view kernel_set_name)
    : state_(std::make_unique<State>(std::move(plan), kernel_set(kernel_set_name))) {}
Executable::Executable(compiler::Plan plan, std::string_view kernel_set_name, Executable& owner)
    : state_(std::make_unique<State>(std::move(plan), kernel_set(kernel_set_name),
                                     owner.state_.get())) {}
Executable::~Executable() = default;
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;

const compiler::Plan& Executable::plan() const {
  return state_->plan;
}

Executable::Slot Executable::slot(std::string_view name) const {
  auto found = state_->slots.find(std::string(name));
  if (found == state_->slots.end()) {
    throw std::invalid_argument("the plan has no input, variable or output named '" +
                                std::string(name) + "'");
  }
  return found->second;
}

const graph::TensorType& Executable::type(Slot slot) const {
  return state_->plan.graph.node(state_->value(slot).node).type;
}

bool Executable::borrowed(Slot slot) const {
  return state_->value(slot).borrowed;
}

void Executable::changed(Slot slot) {
  const NamedValue& target = state_->value(slot);
  if (!target.borrowed) {
    throw std::invalid_argument("'" + target.name +
                                "' is not read where another step keeps it; write it here");
  }
  state_->mark_copies_stale(target.node);
}

void Executable::write(Slot slot, std::span<const float> values) {
  const TensorRef& target = state_->writable(slot, values.size());
  if (target.dtype == graph::DType::f32) {
    std::memcpy(target.data, values.data(), values.size_bytes());
    return;
  }
  if (is_half(target.dtype)) {
    state_->kernels.narrow(values.data(), target.half(), target.count, target.dtype);
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    store(target, static_cast<std::int64_t>(i), values[i]);
}

void Executable::write(Slot slot, std::span<const std::int32_t> values) {
  const TensorRef& target = state_->writable(slot, values.size());
  if (target.dtype == graph::DType::i32) {
    std::memcpy(target.data, values.data(), values.size_bytes());
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    store(target, static_cast<std::int64_t>(i), values[i]);
}

void Executable::write(Slot slot, std::span<const double> values) {
  const TensorRef& target = state_->writable(slot, values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    store(target, static_cast<std::int64_t>(i), values[i]);
}

std::vector<double> Executable::read(Slot slot) const {
  const TensorRef& source = state_->value(slot).value;
  std::vector<double> result(static_cast<std::size_t>(source.count));
  for (std::int64_t i = 0; i < source.count; ++i)
    result[static_cast<std::size_t>(i)] = load(source, i);
  return result;
}

double Executable::scalar(Slot slot) const {
  return load(state_->named[static_cast<std::size_t>(slot)].value, 0);
}

std::span<float> Executable::floats_to_write(Slot slot) {
  const NamedValue& named = state_->value(slot);
  const TensorRef& target = state_->writable(slot, static_cast<std::size_t>(named.value.count));
  if (target.dtype != graph::DType::f32) {
    throw std::invalid_argument("'" + named.name + "' holds " +
                                std::string(graph::dtype_name(target.dtype)) + ", not f32");
  }
  return {target.f32(), static_cast<std::size_t>(target.count)};
}

std::span<const float> Executable::floats(Slot slot) const {
  const NamedValue& named = state_->value(slot);
  if (named.value.dtype != graph::DType::f32) {
    throw std::invalid_argument("'" + named.name + "' holds " +
                                std::string(graph::dtype_name(named.value.dtype)) + ", not f32");
  }
  return {named.value.f32(), static_cast<std::size_t>(named.value.count)};
}

void Executable::run(const std::function<void()>& before_f32_variables_change) {
  state_->run(before_f32_variables_change);
}

void Executable::release_temporaries() {
  State& state = *state_;
  std::int64_t persistent = state.plan.memory.persistent_bytes;
  storage::release_pages(state.arena.data() + persistent,
                         static_cast<std::size_t>(state.arena.size() - persistent));
  storage::release_pages(state.task_scratch_memory.data(),
                         static_cast<std::size_t>(state.task_scratch_memory.size()));
}

std::int64_t Executable::steps_run() const {
  return state_->steps;
}

double Executable::simulated_seconds() const {
  return static_cast<double>(state_->steps) * state_->plan.mapping.estimate.step_seconds;
}

void Executable::set_profiling(bool on) {
  state_->profiling = on;
}

const Executable::HostProfile& Executable::host_profile() const {
  return state_->profile;
}

std::int64_t Executable::arena_bytes() const {
  return state_->arena.size();
}
std::int64_t Executable::work_space_bytes() const {
  return static_cast<std::int64_t>(state_->task_scratch_memory.size());
}

std::int64_t Executable::scratch_bytes() const {
  std::int64_t bytes = state_->scratch.size() + state_->task_scratch_memory.size();
  for (const StepWork& work : state_->step) {
    if (const auto* chain = std::get_if<ElementwiseChain>(&work)) bytes += chain->buffer_bytes();
  }
  return bytes;
}

}  // namespace csrun::runtime

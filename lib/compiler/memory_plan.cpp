#include "memory_plan.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "kernel_library.hpp"
#include "node_users.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;

std::int64_t aligned(std::int64_t bytes, std::int64_t alignment = kBufferAlignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Best-fit placement in a growing arena, merging neighbouring free blocks.
class ArenaAllocator {
 public:
  explicit ArenaAllocator(std::int64_t base) : top_(base), peak_(base) {}

  std::int64_t allocate(std::int64_t bytes) {
    auto fit = by_size_.lower_bound(bytes);
    if (fit != by_size_.end()) {
      auto [size, offset] = *fit;
      erase(offset, size);
      if (size > bytes) insert(offset + bytes, size - bytes);
      return offset;
    }
    // Grow the arena, starting inside a free block that ends at its top.
    std::int64_t offset = top_;
    if (!by_offset_.empty()) {
      auto last = std::prev(by_offset_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        erase(last->first, last->second);
      }
    }
    top_ = offset + bytes;
    peak_ = std::max(peak_, top_);
    return offset;
  }

  void release(std::int64_t offset, std::int64_t bytes) {
    auto next = by_offset_.lower_bound(offset);
    if (next != by_offset_.end() && next->first == offset + bytes) {
      bytes += next->second;
      erase(next->first, next->second);
    }
    auto previous = by_offset_.lower_bound(offset);
    if (previous != by_offset_.begin()) {
      --previous;
      if (previous->first + previous->second == offset) {
        offset = previous->first;
        bytes += previous->second;
        erase(previous->first, previous->second);
      }
    }
    if (offset + bytes == top_) {
      top_ = offset;
    } else {
      insert(offset, bytes);
    }
  }

  std::int64_t peak() const { return peak_; }

 private:
  void insert(std::int64_t offset, std::int64_t bytes) {
    by_offset_.emplace(offset, bytes);
    by_size_.emplace(bytes, offset);
  }

  void erase(std::int64_t offset, std::int64_t bytes) {
    by_offset_.erase(offset);
    auto [first, last] = by_size_.equal_range(bytes);
    for (auto it = first; it != last; ++it) {
      if (it->second == offset) {
        by_size_.erase(it);
        return;
      }
    }
  }

  std::int64_t top_;
  std::int64_t peak_;
  std::map<std::int64_t, std::int64_t> by_offset_;     // free blocks: offset -> size
  std::multimap<std::int64_t, std::int64_t> by_size_;  // free blocks: size -> offset
};

class MemoryPlanner {
 public:
  MemoryPlanner(const graph::Graph& graph, std::span<const Kernel> kernels)
      : graph_(graph), users_(graph), kernels_(kernels), last_read_(graph.size(), -1) {
    plan_.buffer_of.assign(graph.size(), -1);
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      for (NodeId operand : kernels[k].operands)
        last_read_[static_cast<std::size_t>(operand)] = static_cast<std::int32_t>(k);
    }
    for (const graph::NamedNode& update : graph.updates()) {
      auto [at, first] = updated_variable_.try_emplace(update.node, -1);
      at->second = first ? graph.find_variable(update.name)->node : -1;
    }
  }

  MemoryPlan run() {
    add_persistent_buffers();
    add_temporaries();
    share_reshaped_buffers();
    extend_lifetimes();
    place_temporaries();
    return std::move(plan_);
  }

 private:
  auto end_of_step() const { return static_cast<std::int32_t>(kernels_.size()); }

  std::int32_t add_buffer(NodeId value, BufferKind kind, std::int32_t first, std::int32_t last) {
    auto index = static_cast<std::int32_t>(plan_.buffers.size());
    plan_.buffers.push_back(
        Buffer{value, kind, 0, aligned(graph_.node(value).type.byte_size()), first, last});
    holders_.emplace_back();
    hold(value, index, first);
    return index;
  }

  // `value`, computed by kernel `kernel`, lives in `buffer`.
  void hold(NodeId value, std::int32_t buffer, std::int32_t kernel) {
    plan_.buffer_of[static_cast<std::size_t>(value)] = buffer;
    Holders& holders = holders_[static_cast<std::size_t>(buffer)];
    holders.last_read = std::max(holders.last_read, last_read_[static_cast<std::size_t>(value)]);
    holders.written_by = kernel;
    holders.returned = holders.returned || users_.escapes(value);
  }

  // The variables first, the 16-bit copies after them, then the other leaves: a step that reads
  // its weights (or adds to its sums) where another step keeps them never touches their
  // buffers, and with them side by side, no huge page its own values fault in covers theirs.
  void add_persistent_buffers() {
    for (const graph::Variable& variable : graph_.variables()) {
      if (variable.role != graph::VariableRole::half_copy)
        add_persistent(variable.node, BufferKind::variable);
    }
    for (const graph::Variable& variable : graph_.variables()) {
      if (variable.role == graph::VariableRole::half_copy)
        add_persistent(variable.node, BufferKind::variable);
    }
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      const graph::Node& node = graph_.nodes()[i];
      if (graph::op_class(node.op) != graph::OpClass::leaf || node.op == graph::OpKind::variable)
        continue;
      add_persistent(static_cast<NodeId>(i),
                     node.op == graph::OpKind::input ? BufferKind::input : BufferKind::constant);
    }
  }

  void add_persistent(NodeId value, BufferKind kind) {
    std::int32_t index = add_buffer(value, kind, -1, end_of_step());
    Buffer& buffer = plan_.buffers[static_cast<std::size_t>(index)];
    if (kind == BufferKind::variable && buffer.bytes >= kPageAlignedVariableBytes)
      plan_.persistent_bytes = aligned(plan_.persistent_bytes, kPageBytes);
    buffer.offset = plan_.persistent_bytes;
    plan_.persistent_bytes += buffer.bytes;
  }

  // A view's result shares its operand's buffer, and so do a variable's new value computed in
  // place and a result written over its operand (below); every other kernel result gets its own:
  // a temporary, or a persistent buffer for what the kernels run at load time compute.
  void add_temporaries() {
    for (std::size_t k = 0; k < kernels_.size(); ++k) {
      const Kernel& kernel = kernels_[k];
      bool view = kernel_spec(kernel.name).cost == CostModel::view;
      auto position = static_cast<std::int32_t>(k);
      for (NodeId result : kernel.results) {
        if (view) {
          hold(result, buffer_of(graph_.node(result).inputs[0]), position);
        } else if (auto variable = updated_in_place(result, k)) {
          hold(result, buffer_of(*variable), position);
        } else if (auto operand = written_over(result, k)) {
          hold(result, buffer_of(*operand), position);
        } else if (kernel.at_load) {
          add_persistent(result, BufferKind::constant);
        } else {
          add_buffer(result, BufferKind::temporary, position, position);
        }
      }
    }
  }

  // A kernel whose result is a reshape of a value computed inside it (a product's epilogue viewed
  // as [batch, sequence, width]) writes that value straight into the result's buffer: the
  // reshape then has nothing to copy.
  void share_reshaped_buffers() {
    for (const Kernel& kernel : kernels_) {
      std::set<NodeId> members(kernel.nodes.begin(), kernel.nodes.end());
      for (NodeId id : kernel.nodes) {
        const graph::Node& node = graph_.node(id);
        if (node.op != graph::OpKind::reshape || buffer_of(id) < 0) continue;
        NodeId source = node.inputs[0];
        if (!members.contains(source) || buffer_of(source) >= 0 || users_.sole_user(source) != id)
          continue;
        plan_.buffer_of[static_cast<std::size_t>(source)] = buffer_of(id);
      }
    }
  }

  std::int32_t buffer_of(NodeId id) const { return plan_.buffer_of[static_cast<std::size_t>(id)]; }

  // The variable whose new value `result` (computed by kernel `k`) may be written straight into
  // the variable's own buffer, saving the end-of-step copy: an elementwise kernel of the same
  // type computes it, every read of the old value happens before it (in earlier kernels, or in
  // this one on the path to `result`, element by element), and the step returns nothing that
  // reads the variable itself.
  std::optional<NodeId> updated_in_place(NodeId result, std::size_t k) const {
    const Kernel& kernel = kernels_[k];
    if (kernel.at_load || kernel_spec(kernel.name).cost != CostModel::streaming) return {};
    auto update = updated_variable_.find(result);
    if (update == updated_variable_.end()) return {};
    NodeId variable = update->second;
    if (variable < 0 || graph_.node(variable).type != graph_.node(result).type) return {};
    if (users_.escapes(variable)) return {};
    if (last_read_[static_cast<std::size_t>(variable)] > static_cast<std::int32_t>(k)) return {};
    if (!read_on_the_way(kernel, variable, result)) return {};
    return variable;
  }

  // Whether every member of `kernel` that reads `value` is `result` or computes something
  // `result` depends on: an elementwise kernel then reads each element of `value` before it
  // writes that element of `result`, so `result` may take `value`'s place.
  bool read_on_the_way(const Kernel& kernel, NodeId value, NodeId result) const {
    std::set<NodeId> before = kernel_ancestors(kernel, result);
    for (NodeId id : kernel.nodes) {
      const std::vector<NodeId>& inputs = graph_.node(id).inputs;
      bool reads = std::find(inputs.begin(), inputs.end(), value) != inputs.end();
      if (reads && id != result && !before.contains(id)) return false;
    }
    return true;
  }

  // The operand whose buffer `result` (computed by kernel `k`) may be written into, so that the
  // two never take memory side by side: one of `result`'s type in a temporary that nothing holding
  // it is read after this kernel or returned by the step, and that the kernel reads before it
  // writes `result` element by element (an elementwise kernel, where it reads it only on the way
  // to `result`: the embedding's gradient divided by the loss scale over the gradient itself) or
  // row by row (a kernel of one node whose rule says so: the cross-entropy's gradient over the
  // logits, a vocabulary's worth a token).
  std::optional<NodeId> written_over(NodeId result, std::size_t k) const {
    const Kernel& kernel = kernels_[k];
    if (kernel.at_load) return {};
    for (NodeId operand : overwritable_operands(kernel, result)) {
      if (free_after(operand, k)) return operand;
    }
    return {};
  }

  // The operands of `kernel` of `result`'s type that it reads before it writes `result`.
  std::vector<NodeId> overwritable_operands(const Kernel& kernel, NodeId result) const {
    const graph::Node& node = graph_.node(result);
    const KernelSpec& spec = kernel_spec(kernel.name);
    std::vector<NodeId> operands;
    auto add = [&](NodeId operand) {
      if (graph_.node(operand).type == node.type) operands.push_back(operand);
    };
    if (spec.cost == CostModel::streaming) {
      for (NodeId operand : kernel.operands) {
        if (read_on_the_way(kernel, operand, result)) add(operand);
      }
      return operands;
    }
    const OpRule* rule = spec.rule(node.op);
    if (kernel.nodes.size() == 1 && rule != nullptr && rule->over_operand && !node.inputs.empty())
      add(node.inputs[0]);
    return operands;
  }

  // Whether `operand` lies in a temporary that no kernel after `k` reads through any value it
  // holds, that kernel `k` does not write already, and that the step does not return.
  bool free_after(NodeId operand, std::size_t k) const {
    std::int32_t buffer = buffer_of(operand);
    if (buffer < 0 || plan_.buffers[static_cast<std::size_t>(buffer)].kind != BufferKind::temporary)
      return false;
    const Holders& holders = holders_[static_cast<std::size_t>(buffer)];
    auto kernel = static_cast<std::int32_t>(k);
    return holders.last_read <= kernel && holders.written_by != kernel && !holders.returned;
  }

  // The members of `kernel` that `node` depends on.
  std::set<NodeId> kernel_ancestors(const Kernel& kernel, NodeId node) const {
    std::set<NodeId> members(kernel.nodes.begin(), kernel.nodes.end());
    std::set<NodeId> found;
    std::vector<NodeId> pending = {node};
    while (!pending.empty()) {
      NodeId current = pending.back();
      pending.pop_back();
      for (NodeId input : graph_.node(current).inputs) {
        if (members.contains(input) && found.insert(input).second) pending.push_back(input);
      }
    }
    return found;
  }

  void extend_lifetimes() {
    for (std::size_t i = 0; i < last_read_.size(); ++i) {
      auto value = static_cast<NodeId>(i);
      if (last_read_[i] >= 0) use(value, last_read_[i]);
      if (users_.escapes(value)) use(value, end_of_step());
    }
  }

  void use(NodeId value, std::int32_t position) {
    std::int32_t index = plan_.buffer_of[static_cast<std::size_t>(value)];
    Buffer& buffer = plan_.buffers.at(static_cast<std::size_t>(index));
    buffer.last_use = std::max(buffer.last_use, position);
  }

  // The temporaries placed both ways below; the smaller arena wins. Each way alone leaves gaps
  // the other avoids: a shift of one value's lifetime by a kernel moved GPT-2 small's arena in
  // cbfloat16 by 150 MB with the first alone.
  void place_temporaries() {
    std::vector<std::size_t> temporaries;
    plan_.unshared_bytes = plan_.persistent_bytes;
    for (std::size_t b = 0; b < plan_.buffers.size(); ++b) {
      if (plan_.buffers[b].kind != BufferKind::temporary) continue;
      temporaries.push_back(b);
      plan_.unshared_bytes += plan_.buffers[b].bytes;
    }
    std::vector<std::int64_t> in_order = offsets_in_kernel_order(temporaries);
    std::vector<std::int64_t> by_size = offsets_largest_first(temporaries);
    std::int64_t in_order_peak = arena_end(temporaries, in_order);
    std::int64_t by_size_peak = arena_end(temporaries, by_size);
    const std::vector<std::int64_t>& chosen = by_size_peak < in_order_peak ? by_size : in_order;
    for (std::size_t t = 0; t < temporaries.size(); ++t)
      plan_.buffers[temporaries[t]].offset = chosen[t];
    plan_.peak_bytes = std::min(in_order_peak, by_size_peak);
  }

  // Kernel by kernel, each buffer born there in the best free block of a growing arena, those
  // that die there freed after.
  std::vector<std::int64_t> offsets_in_kernel_order(const std::vector<std::size_t>& temporaries) {
    std::vector<std::vector<std::size_t>> born(kernels_.size());
    std::vector<std::vector<std::size_t>> dying(kernels_.size() + 1);
    for (std::size_t t = 0; t < temporaries.size(); ++t) {
      const Buffer& buffer = plan_.buffers[temporaries[t]];
      born[static_cast<std::size_t>(buffer.first_use)].push_back(t);
      dying[static_cast<std::size_t>(buffer.last_use)].push_back(t);
    }
    std::vector<std::int64_t> offsets(temporaries.size());
    ArenaAllocator arena(plan_.persistent_bytes);
    for (std::size_t k = 0; k < kernels_.size(); ++k) {
      for (std::size_t t : born[k])
        offsets[t] = arena.allocate(plan_.buffers[temporaries[t]].bytes);
      for (std::size_t t : dying[k])
        arena.release(offsets[t], plan_.buffers[temporaries[t]].bytes);
    }
    return offsets;
  }

  // Largest first, each buffer in the smallest gap that holds it between the buffers already
  // placed that are live at the same time (TensorFlow Lite's greedy-by-size), else above them.
  std::vector<std::int64_t> offsets_largest_first(const std::vector<std::size_t>& temporaries) {
    std::vector<std::size_t> order(temporaries.size());
    for (std::size_t t = 0; t < order.size(); ++t)
      order[t] = t;
    auto buffer = [&](std::size_t t) -> const Buffer& { return plan_.buffers[temporaries[t]]; };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return buffer(a).bytes > buffer(b).bytes;
    });
    std::vector<std::int64_t> offsets(temporaries.size());
    std::vector<Placed> placed;
    placed.reserve(temporaries.size());
    for (std::size_t t : order) {
      const Buffer& next = buffer(t);
      offsets[t] = smallest_gap(placed, next);
      Placed now{next.first_use, next.last_use, offsets[t], offsets[t] + next.bytes};
      auto at =
          std::upper_bound(placed.begin(), placed.end(), now.offset,
                           [](std::int64_t offset, const Placed& p) { return offset < p.offset; });
      placed.insert(at, now);
    }
    return offsets;
  }

  // A placed buffer's lifetime and range side by side: the placement reads them all for every
  // buffer it places (GPT-3 175B's 96 layers: 18,000 buffers).
  struct Placed {
    std::int32_t first_use;
    std::int32_t last_use;
    std::int64_t offset;
    std::int64_t end;
  };

  // The start of the smallest gap that holds `next` between the `placed` buffers (in the order of
  // their offsets) live at the same time as it, from the end of the persistent buffers; else the
  // end of the last of them. A gap of exactly its size is the first smallest: the scan ends there.
  std::int64_t smallest_gap(const std::vector<Placed>& placed, const Buffer& next) const {
    std::int64_t cursor = plan_.persistent_bytes;
    std::optional<std::int64_t> best;
    std::int64_t best_size = 0;
    for (const Placed& other : placed) {
      if (other.first_use > next.last_use || next.first_use > other.last_use) continue;
      std::int64_t gap = other.offset - cursor;
      if (gap >= next.bytes && (!best || gap < best_size)) {
        if (gap == next.bytes) return cursor;
        best = cursor;
        best_size = gap;
      }
      cursor = std::max(cursor, other.end);
    }
    return best.value_or(cursor);
  }

  std::int64_t arena_end(const std::vector<std::size_t>& temporaries,
                         const std::vector<std::int64_t>& offsets) const {
    std::int64_t end = plan_.persistent_bytes;
    for (std::size_t t = 0; t < temporaries.size(); ++t)
      end = std::max(end, offsets[t] + plan_.buffers[temporaries[t]].bytes);
    return end;
  }

  const graph::Graph& graph_;
  NodeUsers users_;
  std::span<const Kernel> kernels_;
  std::vector<std::int32_t> last_read_;  // per node: the last kernel reading it, or -1
  // Per value a variable's update takes: that variable's node, or -1 when it updates two.
  std::unordered_map<NodeId, NodeId> updated_variable_;
  // What the values a buffer holds so far need of it: the last kernel reading one of them, the
  // last kernel writing one, and whether the step returns one.
  struct Holders {
    std::int32_t last_read = -1;
    std::int32_t written_by = -1;
    bool returned = false;
  };
  std::vector<Holders> holders_;  // per buffer
  MemoryPlan plan_;
};

}  // namespace

const char* buffer_kind_name(BufferKind kind) {
  switch (kind) {
    case BufferKind::input:
      return "input";
    case BufferKind::variable:
      return "variable";
    case BufferKind::constant:
      return "constant";
    case BufferKind::temporary:
      return "temporary";
  }
  return "?";
}

LivePeak live_peak(const MemoryPlan& memory, std::size_t kernels) {
  auto temporary = [](const Buffer& buffer) { return buffer.kind == BufferKind::temporary; };
  // Results the step returns live to its end, one past the last kernel.
  std::vector<std::int64_t> change(kernels + 2, 0);
  for (const Buffer& buffer : memory.buffers) {
    if (!temporary(buffer)) continue;
    change[static_cast<std::size_t>(buffer.first_use)] += buffer.bytes;
    change[static_cast<std::size_t>(buffer.last_use) + 1] -= buffer.bytes;
  }
  LivePeak peak;
  std::int64_t live = 0;
  for (std::int32_t kernel = 0; kernel < static_cast<std::int32_t>(kernels); ++kernel) {
    live += change[static_cast<std::size_t>(kernel)];
    if (live <= peak.bytes) continue;
    peak.kernel = kernel;
    peak.bytes = live;
  }
  for (std::size_t b = 0; b < memory.buffers.size(); ++b) {
    const Buffer& buffer = memory.buffers[b];
    if (temporary(buffer) && buffer.first_use <= peak.kernel && peak.kernel <= buffer.last_use)
      peak.buffers.push_back(static_cast<std::int32_t>(b));
  }
  std::stable_sort(peak.buffers.begin(), peak.buffers.end(), [&](std::int32_t a, std::int32_t b) {
    return memory.buffers[static_cast<std::size_t>(a)].bytes >
           memory.buffers[static_cast<std::size_t>(b)].bytes;
  });
  return peak;
}

MemoryPlan plan_memory(const graph::Graph& graph, std::span<const Kernel> kernels) {
  return MemoryPlanner(graph, kernels).run();
}

}  // namespace csrun::compiler

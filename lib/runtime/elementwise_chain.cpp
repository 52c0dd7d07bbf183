#include "elementwise_chain.hpp"

#include "compiler/plan.hpp"
#include "full_sum.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace csrun::runtime {

namespace {

// 4096 f32 elements: a chain of a dozen values fits in a core's L2 cache. A sum's chunk, so that
// the chain's sums add as the reduce kernel does.
constexpr std::int64_t kChunkElements = kSumChunk;
// A slot holds a chunk of the widest dtype (f32, i32), a whole number of cache lines.
constexpr std::int64_t kSlotBytes = kChunkElements * 4;
// A thread takes at least this many chunks: fewer do not repay waking it.
constexpr std::int64_t kChunksPerPart = 8;

// `length` elements of `value`'s dtype at `data`, as a flat vector.
TensorRef flat(const TensorRef& value, std::byte* data, std::int64_t length) {
  TensorRef chunk = value;
  chunk.data = data;
  chunk.rank = 1;
  chunk.shape = {};
  chunk.shape[0] = length;
  chunk.count = length;
  return chunk;
}

// Elements [begin, begin + length) of a whole value; a single value stays whole and broadcasts.
TensorRef chunk_of(const TensorRef& whole, std::int64_t count, std::int64_t begin,
                   std::int64_t length) {
  if (whole.count != count) return whole;
  return flat(whole, whole.data + begin * static_cast<std::int64_t>(graph::dtype_size(whole.dtype)),
              length);
}

// Elements [begin, begin + length) of what `operand` is broadcast to, as `how` reads it, copied
// to `chunk`: runs of the operand (repeat 1) or runs of one element of it.
template <class Element>
void copy_broadcast(const Element* operand, graph::FlatBroadcast how, std::int64_t begin,
                    std::int64_t length, Element* chunk) {
  for (std::int64_t done = 0; done < length;) {
    std::int64_t index = begin + done;
    std::int64_t element = how.element(index);
    std::int64_t run = std::min(length - done, how.run_at(index));
    if (how.repeat == 1) {
      std::copy_n(operand + element, run, chunk + done);
    } else {
      std::fill_n(chunk + done, run, operand[element]);
    }
    done += run;
  }
}

void copy_broadcast(const TensorRef& operand, graph::FlatBroadcast how, std::int64_t begin,
                    std::int64_t length, std::byte* chunk) {
  switch (graph::dtype_size(operand.dtype)) {
    case 1:
      return copy_broadcast(operand.boolean(), how, begin, length,
                            reinterpret_cast<std::uint8_t*>(chunk));
    case 2:
      return copy_broadcast(operand.half(), how, begin, length,
                            reinterpret_cast<std::uint16_t*>(chunk));
    default:
      return copy_broadcast(operand.i32(), how, begin, length,
                            reinterpret_cast<std::int32_t*>(chunk));
  }
}

// The chunk of a chunk-local value: `length` elements at the start of its slot.
TensorRef slot_of(const TensorRef& value, std::byte* buffer, std::int32_t slot,
                  std::int64_t length) {
  return flat(value, buffer + slot * kSlotBytes, length);
}

}  // namespace

namespace {

using graph::DType;
using graph::OpKind;

// The instructions of f32 arithmetic (exp, erf, exact gelu and sigmoid among them), and those whose
// result is a boolean: comparisons of f32 values, is_finite, logical_not of a boolean.
constexpr std::pair<OpKind, ChainCode> kArithmetic[] = {
    {OpKind::add, ChainCode::add},         {OpKind::sub, ChainCode::sub},
    {OpKind::mul, ChainCode::mul},         {OpKind::div, ChainCode::div},
    {OpKind::maximum, ChainCode::maximum}, {OpKind::minimum, ChainCode::minimum},
    {OpKind::neg, ChainCode::neg},         {OpKind::abs, ChainCode::abs},
    {OpKind::relu, ChainCode::relu},       {OpKind::sqrt, ChainCode::sqrt},
    {OpKind::rsqrt, ChainCode::rsqrt},     {OpKind::exp, ChainCode::exp},
    {OpKind::erf, ChainCode::erf},         {OpKind::gelu, ChainCode::gelu},
    {OpKind::sigmoid, ChainCode::sigmoid}};
constexpr std::pair<OpKind, ChainCode> kToBoolean[] = {
    {OpKind::less, ChainCode::less},           {OpKind::less_equal, ChainCode::less_equal},
    {OpKind::greater, ChainCode::greater},     {OpKind::greater_equal, ChainCode::greater_equal},
    {OpKind::equal, ChainCode::equal},         {OpKind::not_equal, ChainCode::not_equal},
    {OpKind::is_finite, ChainCode::is_finite}, {OpKind::logical_not, ChainCode::logical_not}};

std::optional<ChainCode> code_in(std::span<const std::pair<OpKind, ChainCode>> table, OpKind op) {
  auto found =
      std::find_if(table.begin(), table.end(), [op](const auto& row) { return row.first == op; });
  if (found == table.end()) return std::nullopt;
  return found->second;
}

// The instruction that computes `task`'s node in registers, as the node kernels would, when the
// plan's rule (compiler::computes_in_registers) lets it run there.
std::optional<ChainCode> register_code(const NodeTask& task) {
  std::vector<DType> operands;
  for (const TensorRef& in : task.in)
    operands.push_back(in.dtype);
  OpKind op = task.node->op;
  if (!compiler::computes_in_registers(*task.node, operands)) return std::nullopt;
  if (op == OpKind::where) return ChainCode::where;
  if (op == OpKind::cast)
    return graph::is_half(task.out.dtype) ? ChainCode::narrow : ChainCode::copy;
  if (task.out.dtype == DType::boolean) return code_in(kToBoolean, op);
  return code_in(kArithmetic, op);
}

graph::Shape shape_of(const TensorRef& value) {
  return graph::Shape(value.shape.begin(), value.shape.begin() + value.rank);
}

// Builds a chain's program. Registers: one per value the chain loads or computes; a register is
// free again once its value's last reader has run, except a single value's (filled once per run),
// an operand's read in place (it holds nothing) and a stored result's (stored after the block).
// Operands a chain broadcasts are loaded a block at a time.
// An instruction's result never takes a register it reads.
class ProgramBuilder {
 public:
  // `row_value` (or -1): an operand read from the caller's row buffer (the row register);
  // `row_result` (or -1): a node whose values the program writes there (the row result).
  ProgramBuilder(std::span<const NodeTask> tasks, std::span<const graph::NodeId> nodes,
                 std::span<const graph::NodeId> summed, std::int64_t count,
                 graph::NodeId row_value = -1, graph::NodeId row_result = -1)
      : tasks_(tasks),
        nodes_(nodes),
        summed_(summed),
        count_(count),
        row_value_(row_value),
        row_result_(row_result) {
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      for (graph::NodeId input : tasks[t].node->inputs)
        last_reader_[input] = t;
    }
    kept_.insert(summed.begin(), summed.end());
  }

  ChainProgram build() {
    for (const NodeTask& task : tasks_) {
      for (std::size_t i = 0; i < task.in.size(); ++i)
        read_from_memory(task.node->inputs[i], task.in[i], task.out);
    }
    for (std::size_t t = 0; t < tasks_.size(); ++t)
      add_instruction(t);
    for (graph::NodeId id : summed_)
      program_.sums.push_back(reg_of_.at(id));
    program_.registers = count_registers_;
    program_.direct.assign(static_cast<std::size_t>(count_registers_), nullptr);
    for (const auto& [reg, data] : direct_)
      program_.direct[static_cast<std::size_t>(reg)] = data;
    return std::move(program_);
  }

 private:
  // An operand the chain does not compute: read in place (a whole f32 one) or loaded, as the
  // chain's `result` broadcasts it.
  void read_from_memory(graph::NodeId input, const TensorRef& operand, const TensorRef& result) {
    if (produced(input) || reg_of_.contains(input)) return;
    if (input == row_value_) {
      program_.row_register = reg_of_[input] = take();
      kept_.insert(input);
      return;
    }
    if (operand.data == nullptr)
      throw std::invalid_argument("a chain in registers reads %" + std::to_string(input) +
                                  ", which is neither stored nor computed before it in the chain");
    std::optional<graph::FlatBroadcast> how =
        graph::flat_broadcast(shape_of(operand), shape_of(result));
    if (!how)
      throw std::invalid_argument("a chain in registers reads %" + std::to_string(input) + ", of " +
                                  std::to_string(operand.count) +
                                  " elements, which it cannot broadcast a block at a time");
    std::int32_t reg = reg_of_[input] = take();
    bool whole_f32 = operand.dtype == DType::f32 && how->repeat == 1 && how->period == count_;
    if (whole_f32 || how->period == 1) kept_.insert(input);
    if (whole_f32) {
      direct_[reg] = operand.f32();
      return;
    }
    program_.loads.push_back({reg, operand.data, operand.dtype, *how});
  }

  void add_instruction(std::size_t t) {
    const NodeTask& task = tasks_[t];
    std::optional<ChainCode> code = register_code(task);
    if (!code)
      throw std::invalid_argument(
          "the plan runs node %" + std::to_string(nodes_[t]) + " (" +
          graph::op_name(task.node->op) + " to " + graph::dtype_name(task.out.dtype) +
          ") in registers, which compute only f32 arithmetic (exp, erf and exact gelu among it), "
          "comparisons, is_finite, logical_not and where, and casts between f32 and 16-bit floats "
          "or from booleans");
    if (*code == ChainCode::narrow && only_stored(t)) return store_narrowed(t);
    ChainInstruction instruction;
    instruction.code = *code;
    if (*code == ChainCode::narrow) instruction.format = task.out.dtype;
    std::array<std::int32_t*, 3> operands{&instruction.a, &instruction.b, &instruction.c};
    for (std::size_t i = 0; i < task.in.size(); ++i)
      *operands[i] = reg_of_.at(task.node->inputs[i]);
    instruction.out = reg_of_[nodes_[t]] = take();
    program_.instructions.push_back(instruction);
    if (nodes_[t] == row_result_) {
      program_.row_result = instruction.out;
      kept_.insert(nodes_[t]);
    }
    if (task.out.data != nullptr) {
      program_.stores.push_back({instruction.out, task.out.data, task.out.dtype});
      kept_.insert(nodes_[t]);
    }
    std::set<graph::NodeId> read(task.node->inputs.begin(), task.node->inputs.end());
    for (graph::NodeId input : read) {
      if (last_reader_.at(input) == t && !kept_.contains(input)) free_.insert(reg_of_.at(input));
    }
  }

  // Whether node t's value is stored and no later node reads it, and what it reads is in a
  // register of its own (not a whole operand read in place).
  bool only_stored(std::size_t t) const {
    graph::NodeId input = tasks_[t].node->inputs.front();
    std::int32_t read = reg_of_.at(input);
    return tasks_[t].out.data != nullptr && !last_reader_.contains(nodes_[t]) &&
           !direct_.contains(read) && read != program_.row_register;
  }

  // A cast to a 16-bit format that is only stored: the store rounds its operand's register, once,
  // to the bits narrowing, widening and narrowing again would give. The register is kept to the
  // end of the block.
  void store_narrowed(std::size_t t) {
    const NodeTask& task = tasks_[t];
    graph::NodeId input = task.node->inputs.front();
    std::int32_t reg = reg_of_[nodes_[t]] = reg_of_.at(input);
    program_.stores.push_back({reg, task.out.data, task.out.dtype});
    kept_.insert(input);
    kept_.insert(nodes_[t]);
  }

  bool produced(graph::NodeId id) const {
    return std::find(nodes_.begin(), nodes_.end(), id) != nodes_.end();
  }

  std::int32_t take() {
    if (free_.empty()) return count_registers_++;
    std::int32_t reg = *free_.begin();
    free_.erase(free_.begin());
    return reg;
  }

  std::span<const NodeTask> tasks_;
  std::span<const graph::NodeId> nodes_;
  std::span<const graph::NodeId> summed_;
  std::int64_t count_;
  graph::NodeId row_value_;
  graph::NodeId row_result_;
  ChainProgram program_;
  std::map<graph::NodeId, std::size_t> last_reader_;
  std::map<graph::NodeId, std::int32_t> reg_of_;
  std::set<graph::NodeId> kept_;
  std::map<std::int32_t, const float*> direct_;
  std::set<std::int32_t> free_;
  std::int32_t count_registers_ = 0;
};

}  // namespace

ChainProgram row_chain_program(std::span<const NodeTask> tasks,
                               std::span<const graph::NodeId> nodes, graph::NodeId row_value,
                               graph::NodeId row_result) {
  std::int64_t count = tasks.empty() ? 0 : tasks.front().out.count;
  for (const NodeTask& task : tasks) {
    if (task.out.count != count)
      throw std::invalid_argument("a row chain's nodes compute " + std::to_string(count) + " and " +
                                  std::to_string(task.out.count) +
                                  " elements: a chain runs nodes of one element count");
  }
  return ProgramBuilder(tasks, nodes, {}, count, row_value, row_result).build();
}

ElementwiseChain::ElementwiseChain(std::vector<NodeTask> tasks,
                                   std::span<const graph::NodeId> nodes,
                                   std::span<const graph::NodeId> chunk_local,
                                   std::vector<NodeTask> sums, bool in_registers,
                                   const KernelSet& kernels, ThreadTeam& team)
    : tasks_(std::move(tasks)),
      sums_(std::move(sums)),
      chunks_(static_cast<std::size_t>(team.size()), tasks_),
      count_(tasks_.front().out.count),
      kernels_(&kernels),
      team_(&team) {
  for (const NodeTask& task : tasks_) {
    if (task.out.count != count_)
      throw std::invalid_argument("a chain's nodes compute " + std::to_string(count_) + " and " +
                                  std::to_string(task.out.count) +
                                  " elements: a chain runs nodes of one element count");
  }
  // A chunk's tasks run inside a part of the team: they must not call on it themselves.
  for (std::vector<NodeTask>& chunk : chunks_) {
    for (NodeTask& task : chunk)
      task.team = nullptr;
  }
  std::vector<std::int32_t> last_read = locate_operands(nodes, chunk_local);
  check_sums(nodes);
  std::vector<graph::NodeId> summed;
  for (std::size_t index : summed_) {
    summed.push_back(nodes[index]);
    last_read[index] = static_cast<std::int32_t>(tasks_.size());  // read after the chunk's tasks
  }
  chunk_sums_.resize(static_cast<std::size_t>(sum_chunks(count_)) * sums_.size());
  if (in_registers) program_ = ProgramBuilder(tasks_, nodes, summed, count_).build();
  // CompiledChain takes no program for a set that runs neither AVX-512 nor AVX2 code.
  if (program_ && chains_compiled_here())
    compiled_ = CompiledChain::compile(*program_, count_, kChunkElements, kernels.compiled_chains);
  if (!program_) {
    assign_slots(last_read);
    assign_broadcast_slots();
  }
  std::int64_t bytes = program_ ? program_->register_bytes() : slots_ * kSlotBytes;
  if (bytes == 0) return;
  buffers_.resize(static_cast<std::size_t>(team.size()));
  for (auto& buffer : buffers_)
    buffer.resize(static_cast<std::size_t>(bytes));
}

// Marks where each task's operands are: a chunk-local value an earlier task computes (its index
// for now) or a stored one (-1). Returns, per task, the last task that reads its result per chunk.
std::vector<std::int32_t> ElementwiseChain::locate_operands(std::span<const graph::NodeId> nodes,
                                                            std::span<const graph::NodeId> local) {
  auto position = [&](graph::NodeId id) {
    auto found = std::find(nodes.begin(), nodes.end(), id);
    return found == nodes.end() ? -1 : static_cast<std::int32_t>(found - nodes.begin());
  };
  places_.resize(tasks_.size());
  for (graph::NodeId id : local) {
    std::int32_t task = position(id);
    if (task < 0)
      throw std::invalid_argument("a chain keeps %" + std::to_string(id) +
                                  " per chunk, but does not compute it");
    places_[static_cast<std::size_t>(task)].out = 0;
  }
  std::vector<std::int32_t> last_read(tasks_.size(), -1);
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    const NodeTask& task = tasks_[t];
    for (std::size_t i = 0; i < task.in.size(); ++i) {
      std::int32_t producer = position(task.node->inputs[i]);
      bool local_input = producer >= 0 && producer < static_cast<std::int32_t>(t) &&
                         places_[static_cast<std::size_t>(producer)].out >= 0;
      if (!local_input && task.in[i].data == nullptr)
        throw std::invalid_argument(
            "a chain's node %" + std::to_string(nodes[t]) + " reads %" +
            std::to_string(task.node->inputs[i]) +
            ", which is neither stored nor computed before it in the chain");
      places_[t].in.push_back(local_input ? producer : -1);
      if (local_input) last_read[static_cast<std::size_t>(producer)] = static_cast<std::int32_t>(t);
    }
  }
  return last_read;
}

static_assert(compiler::kMaxChainSums == kMaxProgramSums);

void ElementwiseChain::check_sums(std::span<const graph::NodeId> nodes) {
  if (sums_.size() > compiler::kMaxChainSums)
    throw std::invalid_argument("a chain takes " + std::to_string(sums_.size()) +
                                " sums, more than " + std::to_string(compiler::kMaxChainSums));
  for (const NodeTask& sum : sums_) {
    graph::NodeId operand = sum.node->inputs.front();
    auto found = std::find(nodes.begin(), nodes.end(), operand);
    if (found == nodes.end() ||
        !compiler::chain_sums(sum.node->op, sum.in.front().dtype, sum.out.dtype, sum.out.count))
      throw std::invalid_argument("a chain sums %" + std::to_string(operand) +
                                  ": a chain's sums are f32 reduce_sum nodes over every axis of "
                                  "an f32 value it computes");
    summed_.push_back(static_cast<std::size_t>(found - nodes.begin()));
  }
}

// Gives each chunk-local result the lowest slot free when its task runs: one whose value's last
// reader ran before (not the task itself: its result may be wider than what it reads).
void ElementwiseChain::assign_slots(std::span<const std::int32_t> last_read) {
  std::set<std::int32_t> free_slots;
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    for (std::size_t p = 0; p < t; ++p) {
      if (places_[p].out >= 0 && last_read[p] == static_cast<std::int32_t>(t) - 1)
        free_slots.insert(places_[p].out);
    }
    for (std::int32_t& in : places_[t].in)
      in = in >= 0 ? places_[static_cast<std::size_t>(in)].out : -1;
    if (places_[t].out < 0) continue;
    if (free_slots.empty()) {
      places_[t].out = slots_++;
    } else {
      places_[t].out = *free_slots.begin();
      free_slots.erase(free_slots.begin());
    }
  }
}

// Every task's broadcast operands get slots after the chunk-local values' slots; a task copies
// its chunks of them just before it runs, so the tasks share those slots.
void ElementwiseChain::assign_broadcast_slots() {
  std::int32_t first = slots_;
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    const NodeTask& task = tasks_[t];
    std::int32_t slot = first;
    for (std::size_t i = 0; i < task.in.size(); ++i) {
      if (places_[t].in[i] >= 0) continue;
      std::optional<graph::FlatBroadcast> how =
          graph::flat_broadcast(shape_of(task.in[i]), shape_of(task.out));
      if (!how)
        throw std::invalid_argument("a chain's node reads an operand of " +
                                    std::to_string(task.in[i].count) +
                                    " elements it cannot broadcast a chunk at a time");
      if (!how->in_place(count_)) places_[t].broadcasts.push_back({i, slot++, *how});
    }
    slots_ = std::max(slots_, slot);
  }
}

std::int64_t ElementwiseChain::buffer_bytes() const {
  return static_cast<std::int64_t>(buffers_.size()) *
         (program_ ? program_->register_bytes() : slots_ * kSlotBytes);
}

void ElementwiseChain::run() {
  std::int64_t chunks = sum_chunks(count_);
  std::int64_t parts =
      std::max<std::int64_t>(1, std::min<std::int64_t>(team_->size(), chunks / kChunksPerPart));
  auto buffer = [&](int part) {
    return buffers_.empty() ? nullptr : buffers_[static_cast<std::size_t>(part)].data();
  };
  auto work = [&](int part) {
    std::int64_t first = chunks * part / parts;
    std::int64_t last = chunks * (part + 1) / parts;
    if (!program_)
      return run_chunks(first, last, chunks_[static_cast<std::size_t>(part)], buffer(part));
    std::int64_t start = first * kChunkElements;
    std::int64_t end = std::min(count_, last * kChunkElements);
    double* sums = chunk_sums_.data() + first * std::ssize(sums_);
    // Compiled code may leave the last elements short of a vector to the interpreter.
    if (compiled_) start = compiled_->run(start, end, sums);
    if (start < end)
      kernels_->run_chain_program(*program_, reinterpret_cast<float*>(buffer(part)), start, end,
                                  sums);
  };
  if (parts <= 1) {
    work(0);
  } else {
    team_->run(work);
  }
  finish_sums();
}

// Each sum's chunks added in order, as the reduce kernel adds a row's.
void ElementwiseChain::finish_sums() {
  std::int64_t chunks = sum_chunks(count_);
  for (std::size_t s = 0; s < sums_.size(); ++s) {
    double total =
        chunks == 0 ? 0.0 : add_in_order(chunk_sums_.data() + s, chunks, std::ssize(sums_));
    sums_[s].out.f32()[0] = static_cast<float>(total);
  }
}

void ElementwiseChain::run_chunks(std::int64_t first, std::int64_t last,
                                  std::vector<NodeTask>& chunk, std::byte* buffer) {
  for (std::int64_t index = first; index < last; ++index) {
    std::int64_t begin = index * kChunkElements;
    std::int64_t length = std::min(kChunkElements, count_ - begin);
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
      const NodeTask& whole = tasks_[t];
      const Places& places = places_[t];
      NodeTask& part = chunk[t];
      part.out = places.out >= 0 ? slot_of(whole.out, buffer, places.out, length)
                                 : chunk_of(whole.out, count_, begin, length);
      for (std::size_t i = 0; i < whole.in.size(); ++i) {
        part.in[i] = places.in[i] >= 0 ? slot_of(whole.in[i], buffer, places.in[i], length)
                                       : chunk_of(whole.in[i], count_, begin, length);
      }
      for (const BroadcastRead& read : places.broadcasts) {
        part.in[read.input] = slot_of(whole.in[read.input], buffer, read.slot, length);
        copy_broadcast(whole.in[read.input], read.how, begin, length, part.in[read.input].data);
      }
      kernels_->run_elementwise(part);
    }
    for (std::size_t s = 0; s < sums_.size(); ++s) {
      chunk_sums_[static_cast<std::size_t>(index) * sums_.size() + s] =
          chunk_sum(chunk[summed_[s]].out.f32(), length, 0);
    }
  }
}

}  // namespace csrun::runtime

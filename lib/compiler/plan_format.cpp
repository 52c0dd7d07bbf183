#include "plan_format.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

#include "storage/atomic_file.hpp"
#include "storage/crc32c.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;

constexpr char kMagic[8] = {'C', 'S', 'R', 'U', 'N', 'P', 'L', 'N'};
constexpr std::size_t kHeaderBytes = 8 + 4 + 8 + 8 + 8;

// How many values each enum stored in a plan has; a byte beyond is corruption.
template <class E>
constexpr unsigned kEnumCount = 0;
template <>
constexpr unsigned kEnumCount<graph::OpKind> = graph::kOpCount;
template <>
constexpr unsigned kEnumCount<graph::DType> = static_cast<unsigned>(graph::DType::boolean) + 1;
template <>
constexpr unsigned kEnumCount<graph::Phase> = static_cast<unsigned>(graph::Phase::update) + 1;
template <>
constexpr unsigned kEnumCount<graph::VariableRole> =
    static_cast<unsigned>(graph::VariableRole::gradient_sum) + 1;
template <>
constexpr unsigned kEnumCount<StepKind> = static_cast<unsigned>(StepKind::eval) + 1;
template <>
constexpr unsigned kEnumCount<ExecutionMode> =
    static_cast<unsigned>(ExecutionMode::weight_streaming) + 1;
template <>
constexpr unsigned kEnumCount<BufferKind> = static_cast<unsigned>(BufferKind::temporary) + 1;
template <>
constexpr unsigned kEnumCount<HostStepKind> = static_cast<unsigned>(HostStepKind::chain) + 1;

// CRC-32C in the CPU's instruction: a plan of GPT-3 175B is 16 MB, read and written each compile.
std::uint64_t checksum(const char* data, std::size_t size) {
  return storage::crc32c(std::string_view(data, size));
}

void put_unsigned(std::string& out, std::uint64_t value, int bytes) {
  char little_endian[8];
  for (int i = 0; i < bytes; ++i)
    little_endian[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
  out.append(little_endian, static_cast<std::size_t>(bytes));
}

// Numbers the format stores as their little-endian bytes, which a little-endian host holds
// already: a vector of them is written in one copy.
template <class T>
constexpr bool kStoredAsInMemory = std::endian::native == std::endian::little &&
                                   (std::is_same_v<T, std::int32_t> ||
                                    std::is_same_v<T, std::uint32_t> ||
                                    std::is_same_v<T, std::int64_t> ||
                                    std::is_same_v<T, std::uint64_t> || std::is_same_v<T, double>);

// Writes values little-endian. Struct layouts are listed once, in the visit() functions below,
// and shared with the Decoder, so the two cannot drift apart.
class Encoder {
 public:
  void operator()(const bool& value) { put_unsigned(bytes, value ? 1 : 0, 1); }
  void operator()(const std::int32_t& value) {
    put_unsigned(bytes, static_cast<std::uint32_t>(value), 4);
  }
  void operator()(const std::uint32_t& value) { put_unsigned(bytes, value, 4); }
  void operator()(const std::int64_t& value) {
    put_unsigned(bytes, static_cast<std::uint64_t>(value), 8);
  }
  void operator()(const std::uint64_t& value) { put_unsigned(bytes, value, 8); }
  void operator()(const double& value) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    put_unsigned(bytes, bits, 8);
  }
  void operator()(const std::string& value) {
    (*this)(static_cast<std::int64_t>(value.size()));
    bytes += value;
  }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(const E& value) { put_unsigned(bytes, static_cast<std::uint64_t>(value), 1); }
  template <class T>
  void operator()(const std::vector<T>& items) {
    (*this)(static_cast<std::int64_t>(items.size()));
    if constexpr (kStoredAsInMemory<T>) {
      bytes.append(reinterpret_cast<const char*>(items.data()), items.size() * sizeof(T));
    } else {
      for (const T& item : items)
        (*this)(item);
    }
  }
  template <class T>
  requires std::is_class_v<T>
  void operator()(const T& value) {
    visit(*this, const_cast<T&>(value));  // visit only reads when encoding
  }

  std::string bytes;
};

class Decoder {
 public:
  Decoder(const std::string& bytes, std::size_t begin, std::string origin)
      : bytes_(bytes), position_(begin), origin_(std::move(origin)) {}

  void operator()(bool& value) {
    std::uint64_t raw = take(1);
    if (raw > 1) fail("a flag holds " + std::to_string(raw));
    value = raw == 1;
  }
  void operator()(std::int32_t& value) {
    value = static_cast<std::int32_t>(static_cast<std::uint32_t>(take(4)));
  }
  void operator()(std::uint32_t& value) { value = static_cast<std::uint32_t>(take(4)); }
  void operator()(std::int64_t& value) { value = static_cast<std::int64_t>(take(8)); }
  void operator()(std::uint64_t& value) { value = take(8); }
  void operator()(double& value) {
    std::uint64_t bits = take(8);
    std::memcpy(&value, &bits, sizeof value);
  }
  void operator()(std::string& value) {
    std::size_t size = count(1);
    value.assign(bytes_, position_, size);
    position_ += size;
  }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(E& value) {
    std::uint64_t raw = take(1);
    if (raw >= kEnumCount<E>) fail("an enumeration holds the unknown value " + std::to_string(raw));
    value = static_cast<E>(raw);
  }
  template <class T>
  void operator()(std::vector<T>& items) {
    items.resize(count(1));
    for (T& item : items)
      (*this)(item);
  }
  template <class T>
  requires std::is_class_v<T>
  void operator()(T& value) { visit(*this, value); }

  // A length, checked against what is left (each item takes at least `item_bytes`).
  std::size_t count(std::size_t item_bytes) {
    std::int64_t value = 0;
    (*this)(value);
    if (value < 0 || static_cast<std::uint64_t>(value) * item_bytes > remaining())
      fail("a length of " + std::to_string(value) + " runs past the end of the file");
    return static_cast<std::size_t>(value);
  }

  std::size_t remaining() const { return bytes_.size() - position_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw PlanFormatError(origin_ + ": corrupt plan (" + what + " at byte " +
                          std::to_string(position_) + "); delete it and compile again");
  }

 private:
  std::uint64_t take(int size) {
    if (remaining() < static_cast<std::size_t>(size)) fail("the file ends early");
    std::uint64_t value = 0;
    for (int i = 0; i < size; ++i)
      value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes_[position_ + i]))
               << (8 * i);
    position_ += static_cast<std::size_t>(size);
    return value;
  }

  const std::string& bytes_;
  std::size_t position_;
  std::string origin_;
};

template <class Io>
void visit(Io& io, graph::TensorType& type) {
  io(type.shape);
  io(type.dtype);
}

template <class Io>
void visit(Io& io, graph::Attributes& a) {
  io(a.shape);
  io(a.axes);
  io(a.perm);
  io(a.begins);
  io(a.ends);
  io(a.values);
  io(a.axis);
  io(a.depth);
  io(a.keepdims);
  io(a.approximate);
  io(a.eps);
  io(a.rate);
  io(a.seed);
  io(a.salt);
  io(a.dtype);
}

template <class Io>
void visit(Io& io, graph::Initializer& init) {
  io(init.name);
  io(init.mean);
  io(init.std);
  io(init.a);
  io(init.b);
  io(init.gain);
  io(init.value);
  io(init.scale);
  io(init.fan_mode);
  io(init.distribution);
}

template <class Io>
void visit(Io& io, graph::NamedNode& named) {
  io(named.name);
  io(named.node);
}

template <class Io>
void visit(Io& io, PrecisionPolicy& policy) {
  io(policy.mixed);
  io(policy.half);
  io(policy.level);
}

template <class Io>
void visit(Io& io, Kernel& kernel) {
  io(kernel.name);
  io(kernel.nodes);
  io(kernel.results);
  io(kernel.operands);
  io(kernel.at_load);
}

template <class Io>
void visit(Io& io, HostStep& step) {
  io(step.kind);
  io(step.kernel);
  io(step.nodes);
  io(step.operand_a);
  io(step.operand_b);
  io(step.transposed_a);
  io(step.transposed_b);
  io(step.windows);
  io(step.windows_sum);
  io(step.windows_tile);
  io(step.bias);
  io(step.result);
  io(step.folded);
  io(step.rounded);
  io(step.dropout);
  io(step.upstream_dropout);
  io(step.row_chain);
  io(step.row_softmax);
  io(step.softmax_chain);
  io(step.sums);
  io(step.chunk_local);
  io(step.in_registers);
}

template <class Io>
void visit(Io& io, Buffer& buffer) {
  io(buffer.value);
  io(buffer.kind);
  io(buffer.offset);
  io(buffer.bytes);
  io(buffer.first_use);
  io(buffer.last_use);
}

template <class Io>
void visit(Io& io, MemoryPlan& memory) {
  io(memory.buffers);
  io(memory.buffer_of);
  io(memory.persistent_bytes);
  io(memory.peak_bytes);
  io(memory.unshared_bytes);
}

template <class Io>
void visit(Io& io, Region& region) {
  io(region.x);
  io(region.y);
  io(region.width);
  io(region.height);
}

template <class Io>
void visit(Io& io, KernelTiming& timing) {
  io(timing.region);
  io(timing.seconds);
  io(timing.bound);
}

template <class Io>
void visit(Io& io, LayerTiming& layer) {
  io(layer.name);
  io(layer.parameters);
  io(layer.kernels);
  io(layer.pes);
  io(layer.forward_seconds);
  io(layer.backward_seconds);
  io(layer.update_seconds);
  io(layer.weight_seconds);
  io(layer.gradient_seconds);
  io(layer.seconds);
  io(layer.bound);
}

template <class Io>
void visit(Io& io, ScratchLayout::Place& place) {
  io(place.node);
  io(place.offset);
  io(place.kernel);
}

template <class Io>
void visit(Io& io, ScratchLayout::Work& work) {
  io(work.shared);
  io(work.per_core);
}

template <class Io>
void visit(Io& io, ScratchLayout& scratch) {
  io(scratch.kernel_values);
  io(scratch.kernel_value_bytes);
  io(scratch.snapshots);
  io(scratch.snapshot_bytes);
  io(scratch.works);
  io(scratch.hardware_bf16_works);
}

template <class Io>
void visit(Io& io, Estimate& e) {
  io(e.step_seconds);
  io(e.samples_per_second);
  io(e.tokens_per_second);
  io(e.num_csx);
  io(e.cluster_step_seconds);
  io(e.cluster_samples_per_second);
  io(e.cluster_tokens_per_second);
  io(e.pe_utilization);
  io(e.sram_bytes);
  io(e.sram_capacity);
  io(e.spilled_bytes);
  io(e.recompute);
  io(e.micro_batch_size);
  io(e.micro_batches);
  io(e.bottleneck);
}

template <class Io>
void visit(Io& io, WaferMapping& mapping) {
  io(mapping.wafer);
  io(mapping.mode);
  io(mapping.mode_reason);
  io(mapping.kernels);
  io(mapping.layers);
  io(mapping.estimate);
}

// A graph is written node by node and read back through the Graph API, which infers every type
// again: a plan whose graph does not type-check is refused.
void visit(Encoder& io, graph::Graph& graph) {
  io(graph.scope_names());
  io(static_cast<std::int64_t>(graph.size()));
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const graph::Node& node = graph.nodes()[i];
    io(node.op);
    io(node.inputs);
    io(node.attrs);
    io(node.type);
    io(std::string(node.location.file()));
    io(node.location.line());
    io(node.scope);
    io(node.phase);
    if (node.op == graph::OpKind::input) io(graph.leaf_name(static_cast<NodeId>(i)));
    if (node.op == graph::OpKind::variable) {
      const graph::Variable& variable =
          *graph.find_variable(graph.leaf_name(static_cast<NodeId>(i)));
      io(variable.name);
      io(variable.role);
      io(variable.init);
      io(variable.copy_of);
    }
  }
  io(graph.outputs());
  io(graph.updates());
}

void read_node(Decoder& io, graph::Graph& graph) {
  graph::Node node;
  io(node.op);
  io(node.inputs);
  io(node.attrs);
  io(node.type);
  std::string file;
  std::uint32_t line = 0;
  io(file);
  io(line);
  node.location = graph::SourceLine(file, line);
  io(node.scope);
  io(node.phase);
  if (node.scope < 0 || static_cast<std::size_t>(node.scope) >= graph.scope_names().size())
    io.fail("a node names scope " + std::to_string(node.scope));
  NodeId id = -1;
  try {
    if (node.op == graph::OpKind::input) {
      std::string name;
      io(name);
      id = graph.add_input(name, node);
    } else if (node.op == graph::OpKind::variable) {
      graph::Variable variable;
      io(variable.name);
      io(variable.role);
      io(variable.init);
      io(variable.copy_of);
      id = graph.add_variable(variable, node);
    } else {
      id = graph.add(node.op, node.inputs, node.attrs, node);
    }
  } catch (const std::exception& error) {
    io.fail(std::string("a node does not type-check: ") + error.what());
  }
  if (graph.node(id).type != node.type)
    io.fail("node %" + std::to_string(id) + " is " + graph.node(id).type.to_string() +
            " but the plan says " + node.type.to_string());
}

void visit(Decoder& io, graph::Graph& graph) {
  std::vector<std::string> scopes;
  io(scopes);
  if (scopes.empty() || !scopes.front().empty()) io.fail("the scope table is malformed");
  for (const std::string& scope : scopes) {
    if (static_cast<std::size_t>(graph.scope_id(scope)) + 1 != graph.scope_names().size())
      io.fail("the scope " + scope + " appears twice");
  }
  std::size_t nodes = io.count(1);
  for (std::size_t i = 0; i < nodes; ++i)
    read_node(io, graph);
  std::vector<graph::NamedNode> outputs;
  std::vector<graph::NamedNode> updates;
  io(outputs);
  io(updates);
  try {
    for (const graph::NamedNode& output : outputs) {
      graph.node(output.node);
      graph.add_output(output.name, output.node);
    }
    for (const graph::NamedNode& update : updates) {
      graph.node(update.node);
      graph.set_update(update.name, update.node);
    }
  } catch (const std::exception& error) {
    io.fail(std::string("the step's results do not fit its graph: ") + error.what());
  }
}

template <class Io>
void visit(Io& io, Plan& plan) {
  io(plan.csrun_version);
  io(plan.fingerprint);
  io(plan.step);
  io(plan.batch_size);
  io(plan.tokens_per_sample);
  io(plan.precision);
  io(plan.graph);
  io(plan.kernels);
  io(plan.memory);
  io(plan.host_steps);
  io(plan.scratch);
  io(plan.mapping);
}

// A host step names nodes of the graph and a kernel of the plan; a gemm has its operands and
// result, and a matmul to run.
template <class InGraph>
void check_host_steps(const Plan& plan, const Decoder& io, InGraph in_graph) {
  auto kernel_count = static_cast<std::int32_t>(plan.kernels.size());
  for (const HostStep& step : plan.host_steps) {
    bool valid = step.kernel >= 0 && step.kernel < kernel_count && !step.nodes.empty();
    for (const std::vector<NodeId>* ids : {&step.nodes, &step.folded, &step.row_chain,
                                           &step.softmax_chain, &step.sums, &step.chunk_local}) {
      valid = valid && std::all_of(ids->begin(), ids->end(), in_graph);
    }
    valid = valid && (step.rounded == -1 || in_graph(step.rounded)) &&
            (step.dropout == -1 || in_graph(step.dropout)) &&
            (step.upstream_dropout == -1 || in_graph(step.upstream_dropout)) &&
            (step.row_softmax == -1 || in_graph(step.row_softmax));
    if (valid && step.kind == HostStepKind::gemm) {
      valid = in_graph(step.operand_a) && in_graph(step.operand_b) && in_graph(step.result) &&
              (step.bias == -1 || in_graph(step.bias)) &&
              (step.windows == -1 || in_graph(step.windows)) &&
              (step.windows_sum == -1 || in_graph(step.windows_sum)) &&
              plan.graph.node(step.nodes.front()).op == graph::OpKind::matmul;
    }
    if (!valid) io.fail("a host step names a node or kernel outside the plan");
  }
}

// Each scratch value lies inside its part of the region (a kernel's values first, the snapshots
// after them) and a kernel's value inside that kernel; compared without adding offsets and sizes,
// as hostile values would overflow a sum.
template <class InGraph>
void check_scratch(const Plan& plan, const Decoder& io, InGraph in_graph) {
  const ScratchLayout& scratch = plan.scratch;
  constexpr std::int64_t kLargest = std::numeric_limits<std::int64_t>::max() / 4;
  for (std::int64_t bytes : {scratch.kernel_value_bytes, scratch.snapshot_bytes}) {
    if (bytes < 0 || bytes > kLargest) io.fail("the scratch layout has an impossible size");
  }
  // A core's part is taken once per core of the team: bounded so that a thousand cores' stays
  // countable.
  for (const auto* works : {&scratch.works, &scratch.hardware_bf16_works}) {
    for (const ScratchLayout::Work& work : *works) {
      if (work.shared < 0 || work.shared > kLargest || work.per_core < 0 ||
          work.per_core > kLargest / 1024)
        io.fail("the scratch layout has an impossible size");
    }
  }
  auto inside = [&](const ScratchLayout::Place& place, std::int64_t begin, std::int64_t end) {
    return in_graph(place.node) && place.offset >= begin && place.offset <= end &&
           plan.graph.node(place.node).type.byte_size() <= end - place.offset;
  };
  auto in_its_kernel = [&](const ScratchLayout::Place& place) {
    if (place.kernel < 0 || static_cast<std::size_t>(place.kernel) >= plan.kernels.size())
      return false;
    const std::vector<NodeId>& nodes = plan.kernels[static_cast<std::size_t>(place.kernel)].nodes;
    return std::find(nodes.begin(), nodes.end(), place.node) != nodes.end();
  };
  for (const ScratchLayout::Place& place : scratch.kernel_values) {
    if (!inside(place, 0, scratch.kernel_value_bytes) || !in_its_kernel(place))
      io.fail("a value of the scratch lies outside its kernel or the kernels' part of the region");
  }
  for (const ScratchLayout::Place& place : scratch.snapshots) {
    if (!inside(place, scratch.kernel_value_bytes, scratch.region_bytes()) || place.kernel != -1)
      io.fail("a snapshot lies outside the scratch region");
  }
}

// Node and buffer references must point inside the plan, so the runtime can trust them.
void check_references(const Plan& plan, const Decoder& io) {
  auto node_count = static_cast<NodeId>(plan.graph.size());
  auto in_graph = [&](NodeId id) { return id >= 0 && id < node_count; };
  for (const Kernel& kernel : plan.kernels) {
    for (const std::vector<NodeId>* ids : {&kernel.nodes, &kernel.results, &kernel.operands}) {
      for (NodeId id : *ids) {
        if (!in_graph(id)) io.fail("kernel " + kernel.name + " names node %" + std::to_string(id));
      }
    }
  }
  check_host_steps(plan, io, in_graph);
  check_scratch(plan, io, in_graph);
  if (plan.memory.buffer_of.size() != plan.graph.size())
    io.fail("the memory plan covers " + std::to_string(plan.memory.buffer_of.size()) +
            " nodes of " + std::to_string(plan.graph.size()));
  auto buffer_count = static_cast<std::int32_t>(plan.memory.buffers.size());
  for (std::int32_t buffer : plan.memory.buffer_of) {
    if (buffer < -1 || buffer >= buffer_count)
      io.fail("a node names buffer " + std::to_string(buffer));
  }
  for (const Buffer& buffer : plan.memory.buffers) {
    // Compared without adding the two: hostile values would overflow the sum.
    bool inside = buffer.offset >= 0 && buffer.bytes >= 0 &&
                  buffer.offset <= plan.memory.peak_bytes &&
                  buffer.bytes <= plan.memory.peak_bytes - buffer.offset;
    if (!in_graph(buffer.value) || !inside) io.fail("a buffer lies outside the arena or graph");
  }
  if (!plan.mapping.kernels.empty() && plan.mapping.kernels.size() != plan.kernels.size())
    io.fail("the wafer mapping times " + std::to_string(plan.mapping.kernels.size()) +
            " kernels of " + std::to_string(plan.kernels.size()));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PlanFormatError(path.string() + ": cannot open the plan: " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

std::string encode_plan(const Plan& plan) {
  Encoder encoder;
  encoder(plan);
  return with_plan_header(encoder.bytes);
}

std::string with_plan_header(std::string_view payload) {
  std::string out(kMagic, sizeof kMagic);
  put_unsigned(out, kPlanFormatVersion, 4);
  put_unsigned(out, graph::op_table_digest(), 8);
  put_unsigned(out, payload.size(), 8);
  put_unsigned(out, checksum(payload.data(), payload.size()), 8);
  return out.append(payload);
}

Plan decode_plan(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < kHeaderBytes || bytes.compare(0, sizeof kMagic, kMagic, sizeof kMagic) != 0)
    throw PlanFormatError(origin + ": not a csrun plan");
  Decoder header(bytes, sizeof kMagic, origin);
  std::uint32_t version = 0;
  std::uint64_t ops = 0;
  std::uint64_t size = 0;
  std::uint64_t sum = 0;
  header(version);
  if (version != kPlanFormatVersion)
    throw PlanFormatError(origin + ": plan format version " + std::to_string(version) +
                          ", but this csrun reads version " + std::to_string(kPlanFormatVersion) +
                          "; compile again");
  header(ops);
  header(size);
  header(sum);
  if (ops != graph::op_table_digest())
    throw PlanFormatError(origin +
                          ": the plan was compiled by a csrun with another set of ops; "
                          "compile again");
  if (bytes.size() - kHeaderBytes != size)
    throw PlanFormatError(origin + ": the plan is truncated or has trailing bytes (" +
                          std::to_string(bytes.size() - kHeaderBytes) + " of " +
                          std::to_string(size) + " payload bytes)");
  if (checksum(bytes.data() + kHeaderBytes, size) != sum)
    throw PlanFormatError(origin + ": the plan's checksum does not match: the file is corrupt");
  Decoder decoder(bytes, kHeaderBytes, origin);
  Plan plan;
  decoder(plan);
  if (decoder.remaining() != 0) decoder.fail("bytes are left over");
  check_references(plan, decoder);
  return plan;
}

void save_plan(const Plan& plan, const std::filesystem::path& path) {
  storage::write_file_atomically(path, encode_plan(plan));
}

Plan load_plan(const std::filesystem::path& path) {
  return decode_plan(read_file(path), path.string());
}

}  // namespace csrun::compiler

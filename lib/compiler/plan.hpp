#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "kernel_matching.hpp"
#include "memory_plan.hpp"
#include "passes.hpp"
#include "scratch_layout.hpp"

namespace csrun::compiler {

// The most sums one chain takes (HostStep::sums).
inline constexpr std::size_t kMaxChainSums = 4;

// Version of the Plan's file format; a plan of another version is recompiled.
inline constexpr std::uint32_t kPlanFormatVersion = 17;

enum class StepKind : std::uint8_t { train, eval };
const char* step_kind_name(StepKind kind);

enum class ExecutionMode : std::uint8_t { none, pipelined, weight_streaming };
const char* execution_mode_name(ExecutionMode mode);  // "none", "pipelined", "weight_streaming"

// A rectangle of processing elements.
struct Region {
  std::int32_t x = 0;
  std::int32_t y = 0;
  std::int32_t width = 0;
  std::int32_t height = 0;

  std::int64_t pes() const { return static_cast<std::int64_t>(width) * height; }
  friend bool operator==(const Region&, const Region&) = default;
};

// Where a kernel runs and how long it takes in one step of one system.
struct KernelTiming {
  Region region;  // its PEs when pipelined; the whole wafer in weight streaming
  double seconds = 0.0;
  std::string bound;  // what limits it: "compute", "memory", "fabric", "latency"

  friend bool operator==(const KernelTiming&, const KernelTiming&) = default;
};

// A layer (a module such as model.transformer_decoder.layers.3) as the wafer runs it.
struct LayerTiming {
  std::string name;
  std::int64_t parameters = 0;
  std::int32_t kernels = 0;
  std::int64_t pes = 0;  // pipelined: the PEs of its kernels
  double forward_seconds = 0.0;
  double backward_seconds = 0.0;
  double update_seconds = 0.0;
  double weight_seconds = 0.0;    // weight streaming: its weights in over system I/O
  double gradient_seconds = 0.0;  // weight streaming: its gradients out
  double seconds = 0.0;           // what the layer adds to a step
  std::string bound;

  friend bool operator==(const LayerTiming&, const LayerTiming&) = default;
};

struct Estimate {
  double step_seconds = 0.0;  // one step on one system (all its micro-batches)
  double samples_per_second = 0.0;
  double tokens_per_second = 0.0;
  std::int64_t num_csx = 1;
  double cluster_step_seconds = 0.0;
  double cluster_samples_per_second = 0.0;
  double cluster_tokens_per_second = 0.0;
  double pe_utilization = 0.0;     // pipelined: PEs given to kernels / PEs of the wafer
  std::int64_t sram_bytes = 0;     // on the wafer
  std::int64_t sram_capacity = 0;  // usable on the wafer
  std::int64_t spilled_bytes = 0;  // weight streaming: activations sent to activation servers
  bool recompute = false;          // weight streaming: the backward pass recomputes activations
  std::int64_t micro_batch_size = 0;
  std::int64_t micro_batches = 1;
  std::string bottleneck;

  friend bool operator==(const Estimate&, const Estimate&) = default;
};

// What lib/wafer decided for the plan: the execution mode, each kernel's place and time, each
// layer's, and the throughput. Empty (mode none) for a CPU plan.
struct WaferMapping {
  std::string wafer;  // the profile's key ("wse2")
  ExecutionMode mode = ExecutionMode::none;
  std::string mode_reason;
  std::vector<KernelTiming> kernels;  // parallel to Plan::kernels
  std::vector<LayerTiming> layers;
  Estimate estimate;

  friend bool operator==(const WaferMapping&, const WaferMapping&) = default;
};

// One call the host runtime makes in a step, decided by the compiler (lower_host) from the kernels
// and the memory plan, so the runtime executes exactly what the plan lists.
enum class HostStepKind : std::uint8_t {
  node,   // one node's kernel
  gemm,   // a matmul read through folded transposes, its product written as a folded bias add's
  chain,  // elementwise nodes over one element count, run chunk by chunk
};
const char* host_step_kind_name(HostStepKind kind);  // "node", "gemm", "chain"

// Whether a chain in registers computes `node` from operands of the dtypes `operands`: f32
// arithmetic (add sub mul div maximum minimum neg abs relu sqrt rsqrt exp erf sigmoid, and gelu
// but its tanh approximation), comparisons of f32 values and is_finite, logical_not of a boolean,
// where over f32 values, casts between f32 and the 16-bit floats and from a boolean to f32. What
// lower-host marks and the runtime's ChainProgram runs.
bool computes_in_registers(const graph::Node& node, std::span<const graph::DType> operands);

// Whether a row chain (HostStep::row_chain) can run with `node`: a softmax or softmax_grad of f32
// values along their last axis. What fuse-softmax groups, lower-host folds and the runtime's row
// kernels take.
bool runs_row_chain(const graph::Node& node);

// Whether a chain can take `op` of an `operand` value to `result` as it computes the value
// (HostStep::sums): a reduce_sum over every axis (`result_count` 1) of an f32 value, to f32. What
// fuse-elementwise groups, lower-host folds and the runtime's chains take.
bool chain_sums(graph::OpKind op, graph::DType operand, graph::DType result,
                std::int64_t result_count);

struct HostStep {
  HostStepKind kind = HostStepKind::node;
  std::int32_t kernel = -1;          // in Plan::kernels
  std::vector<graph::NodeId> nodes;  // node, gemm: the node (the matmul); chain: in order
  // A gemm's operands: the matmul's, or a folded transpose's source read with `transposed`.
  graph::NodeId operand_a = -1;
  graph::NodeId operand_b = -1;
  bool transposed_a = false;
  bool transposed_b = false;
  // A gemm whose operand b is a convolution's windows (f32), never stored: the windows node
  // (folded, with the reshape that views them as matrices and a transpose of that), whose source
  // operand_b then is; the GEMM reads `windows_tile` of their columns at a time, formed for it in
  // each core's work space (ScratchLayout::works). -1: none.
  graph::NodeId windows = -1;
  // A gemm whose product is a convolution's windows' gradient, never stored: the windows_sum
  // (folded, with the reshape that views the product as windows) it is summed onto, the step's
  // result; the GEMM computes `windows_tile` of the product's columns at a time in each core's
  // work space, rounds them to the product's type and adds them in. -1: none.
  graph::NodeId windows_sum = -1;
  // Columns of the windows' matrices, or of a summed product, a tile takes.
  std::int64_t windows_tile = 0;
  graph::NodeId bias = -1;            // one f32 value per column each row starts as (-1: none)
  graph::NodeId result = -1;          // where the product goes: the matmul, or the folded bias add
  std::vector<graph::NodeId> folded;  // kernel nodes this step computes without running them
  // A node step's cast of its result to 16 bits (folded), written by its kernel as it writes the
  // result: a softmax's rounded copy, or that of a softmax_grad's row_softmax (-1: none).
  graph::NodeId rounded = -1;
  // A dropout of that softmax (folded, f32; -1: none) that `rounded` casts instead of the softmax
  // itself (attention's dropped-out probabilities): the kernel drops each row out as it rounds it,
  // so the dropped-out f32 values are never stored.
  graph::NodeId dropout = -1;
  // A softmax_grad step's upstream operand when it is a dropout (folded, f32; -1: none) of a
  // stored value that only the gradient reads (attention dropout's backward): the kernel drops
  // each row of that value out into a row buffer as it takes the gradient, so the dropped-out
  // upstream is never stored.
  graph::NodeId upstream_dropout = -1;
  // Elementwise nodes a softmax or softmax_grad step (f32, along the last axis) runs row by row,
  // in registers, as a chain (lib/runtime's ChainProgram): a softmax's compute its input, the
  // last one's rows written where the softmax's result goes (or its row buffer, when the result
  // is kept per row) and normalized there; a softmax_grad's read its result, each row of which
  // the kernel computes into a row buffer.
  std::vector<graph::NodeId> row_chain;
  // A softmax_grad step's softmax (folded; -1: none): the f32 softmax that is the gradient's y
  // operand and that only the gradient and its rounded copy read (attention's probabilities made
  // again for the backward pass). The step computes its rows a few at a time into a row buffer,
  // rounds them into `rounded` and takes the gradient of them there, so they are never stored.
  graph::NodeId row_softmax = -1;
  // The elementwise nodes that compute that softmax's input (the scale and the mask), run row by
  // row as a chain whose last node's rows the softmax normalizes where they are written. Empty:
  // the softmax reads its stored input.
  std::vector<graph::NodeId> softmax_chain;
  // A chain's nodes whose values only later nodes of the chain read: kept one chunk at a time in
  // the core's cache, never stored whole. A node step's: the values its row chain keeps one row
  // at a time (a softmax_grad's own among them), and a softmax's own when only its rounded copy
  // reads it (each row computed into a row buffer, then rounded).
  std::vector<graph::NodeId> chunk_local;
  // A chain's full sums: reduce_sum nodes over every axis of one of its f32 values, each taken
  // chunk by chunk as the chain computes the value (in the reduce kernel's order), so the value
  // need not be stored to be summed.
  std::vector<graph::NodeId> sums;  // at most kMaxChainSums
  // A chain run a block of values at a time through all of its nodes, its chunk-local values in
  // registers (f32 arithmetic, comparisons, where, casts between f32 and bfloat16, every operand
  // whole or a single value); otherwise node by node over each chunk.
  bool in_registers = false;

  friend bool operator==(const HostStep&, const HostStep&) = default;
};

// The compiler's output: everything needed to run a step, and how it would run on the wafer.
struct Plan {
  std::string csrun_version;
  std::string fingerprint;  // of the traced graph it was compiled from
  StepKind step = StepKind::train;
  std::int64_t batch_size = 0;         // samples per step on one system, as traced
  std::int64_t tokens_per_sample = 0;  // 0 when samples are not sequences
  PrecisionPolicy precision;
  graph::Graph graph;           // after the passes
  std::vector<Kernel> kernels;  // in execution order
  MemoryPlan memory;
  std::vector<HostStep> host_steps;  // what the runtime calls, kernel by kernel
  ScratchLayout scratch;             // where values without an arena buffer live
  WaferMapping mapping;

  friend bool operator==(const Plan&, const Plan&) = default;
};

// The variables of `reader` that its step can read where a step of `owner` keeps them instead of
// holding a copy: the same name and type in both plans, and `reader` does not update them (a
// 16-bit copy `reader` keeps of one is rounded again once it is told `owner` changed it). An eval
// step beside the training step reads the weights so, and a split batch's micro-step the weights
// its update step updates.
std::vector<graph::NodeId> variables_read_from(const Plan& reader, const Plan& owner);
// The sums (graph::VariableRole::gradient_sum) that `reader` adds to where `owner` reads them as
// inputs of the same name and type: a split batch's micro-step sums its gradients straight into
// its update step's inputs.
std::vector<graph::NodeId> sums_kept_by(const Plan& reader, const Plan& owner);
// The bytes of `variables` of `plan` (those a step reads where another keeps them, say: what it
// does not hold itself).
std::int64_t variable_bytes(const Plan& plan, std::span<const graph::NodeId> variables);
// What makes one sample of the plan's step large, as a memory refusal tells the user to lower it:
// "the sequence length", or for samples that are not sequences (UNet's images) "the size of a
// sample (its image_shape)".
const char* sample_size_name(const Plan& plan);

}  // namespace csrun::compiler

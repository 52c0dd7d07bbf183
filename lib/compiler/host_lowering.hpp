#pragma once

#include <span>
#include <string>
#include <vector>

#include "plan.hpp"

namespace csrun::compiler {

// A lone elementwise node this large runs as a chain of one, so its chunks split across the
// host's cores.
inline constexpr std::int64_t kLoneChainElements = 1 << 16;

// The host steps of a compiled step (lower-host, after kernel matching and memory planning),
// kernel by kernel:
// - a matmul whose operand is a transpose of its last two axes living inside the kernel and read
//   by nothing else reads the transpose's source with the transposed flag (the transpose does not
//   run);
// - an f32 matmul whose product lives inside the kernel and feeds only an add of one f32 value
//   per column writes into the add's result, each row starting as that bias (PyTorch's addmm);
//   not when the add's result shares memory with what the product reads;
// - consecutive elementwise nodes over one element count, whose operands have that count or one
//   element, run as a chain, chunk by chunk; a lone one of kLoneChainElements or more too. A
//   chain's values that live inside the kernel and only the chain reads are chunk-local (never
//   stored whole). A kernel that runs at load time runs node by node;
// - a softmax kernel's elementwise nodes run row by row with its softmax (those computing its
//   input) or softmax_grad (those reading it): HostStep::row_chain. A kernel of a softmax and
//   its gradient, where only the gradient and the softmax's rounded copy read the softmax, is one
//   step of the softmax_grad that computes the softmax's rows: HostStep::row_softmax. A dropout
//   between a softmax and its rounded copy, or computing a softmax_grad's upstream operand, that
//   nothing outside the kernel reads is applied by the step row by row: HostStep::dropout,
//   HostStep::upstream_dropout.
std::vector<HostStep> lower_host(const graph::Graph& graph, std::span<const Kernel> kernels,
                                 const MemoryPlan& memory);

// The plan's host steps, one line each with its kernel: "k3 matmul: gemm %12 (%3, %9^T) + %10 ->
// %13 [folds %9 transpose, %13 add]", "k4 fused_elementwise: chain %14 mul, %15 add",
// "k5 softmax: node %16 softmax"; a chain ends with its chunk-local values ("[per chunk %14]").
std::string host_steps_text(const Plan& plan);

// What the runtime calls for a host step, in a word: "gemm+bias^T" (a GEMM with a folded bias add
// and a folded transpose), "chain3" (three elementwise nodes in one chunked pass),
// "chain14@registers" (fourteen in registers), "chain4+sum@registers" (that also sum one of their
// values over every axis; "+sum2": two), "node", "node+chain3@rows" (a softmax with three
// elementwise nodes run row by row with it), "node+softmax+chain5@rows" (a softmax_grad that
// computes its softmax, five elementwise nodes of the two run row by row); "+dropout" and
// "+upstream_dropout" where the step drops its rounded copy or its upstream out.
std::string host_step_call(const HostStep& step);

}  // namespace csrun::compiler

#pragma once

#include <cstddef>

#include "graph/types.hpp"
#include "program.hpp"

namespace csrun::compiler {

// Each pass does one thing to the program and returns how many nodes it changed (removed,
// replaced, inserted or fused), which the pass statistics report.

// Drops nodes nothing needs: no output, update or live node reads them. Inputs and variables stay.
std::size_t eliminate_dead_code(Program& program);

// Makes nodes that compute the same thing (op, operands, attributes; commutative operands in
// either order) one node.
std::size_t eliminate_common_subexpressions(Program& program);

// Replaces a node whose operands are all constants by the constant it computes, when that has at
// most kMaxFoldedElements elements (larger results would bloat the plan). An iota, which has no
// operands, stays: it is a static value already.
inline constexpr std::int64_t kMaxFoldedElements = 4096;
std::size_t fold_constants(Program& program);

// Rewrites by algebraic identities that keep results bit for bit: x+0, x*1, x/1 -> x; x/2^k ->
// x*2^-k; pow(x, 1 | 2 | 0.5 | -0.5); neg(neg(x)), not(not(x)); casts, reshapes, transposes,
// broadcasts, slices and pads that change nothing; windows (and their sums) of one element are
// reshapes; reshape of a reshape and transpose of a transpose become one (not a last-two-axes
// swap for products over a row-copying transpose); where(c, a, a) -> a; (A B)^T -> B^T A^T, so
// the transposes fuse into the product.
std::size_t simplify_algebra(Program& program);

// Mixed precision (the Model Zoo's precision_opt_level): weights stay f32 masters; every matmul
// reads its operands in the 16-bit type and accumulates in f32. Level 0 keeps matmul results
// f32; level 1 stores them 16-bit except in batched (attention) products; level 2 stores every
// matmul result 16-bit and runs softmax in 16 bits. Every conversion is an explicit cast.
struct PrecisionPolicy {
  bool mixed = false;  // off: the graph stays f32
  graph::DType half = graph::DType::bf16;
  int level = 1;

  friend bool operator==(const PrecisionPolicy&, const PrecisionPolicy&) = default;
};
std::size_t lower_precision(Program& program, const PrecisionPolicy& policy);

// Gives each f32 parameter that the step casts to a 16-bit type (a product's operand under mixed
// precision) and updates, or reads so in the backward pass, a 16-bit copy (a variable of role
// half_copy): the casts become reads of the copy, and an update of the parameter narrows its new
// value into the copy in the same elementwise pass, so that no step reads the f32 weights again
// only to round them (a step that does not update the parameter reads the copy the runtime
// rounded when the parameter was written; with `layers_recomputed`, such a step casts it where it
// reads it, again in the backward pass). Returns the casts replaced.
std::size_t keep_half_copies(Program& program, bool layers_recomputed = false);

// Moves each cast from a 16-bit type to f32 to just before its first reader: the smaller 16-bit
// value is what stays alive in between, and the widening can join its reader's elementwise
// kernel (the logits' weight gradient, widened in the lm_head's backward, is read only by the
// embedding's update at the end of the backward pass). A widening the optimizer reads first stays:
// schedule-updates moves a weight's update up to its gradient.
std::size_t sink_casts(Program& program);

// Moves the optimizer's nodes (the update phase) to where their operands are ready and no other
// node still reads the variables they read: a parameter's update follows its gradient, so the
// gradient's memory is free for the rest of the backward pass. Other nodes keep their order.
std::size_t schedule_updates(Program& program);

// Recomputes, for an elementwise reader that cannot share a kernel with the one computing it, an
// f32 value that a few elementwise nodes make from a value stored anyway (a 16-bit product widened,
// divided by the loss scale, chosen against zero by dynamic loss scaling's verdict), instead of
// storing it: a gradient the update reads after the whole backward pass stays in 16 bits until
// then. Returns the nodes added.
std::size_t recompute_values(Program& program);

// Recomputes a convolution's windows (a windows op, the reshapes of its result, and the pad only
// it reads) where a later phase reads them (the weight's gradient), from the unpadded
// input: the windows, as many times the input's size as the kernel has elements, are then alive
// only around the forward product and around the gradient, not from one to the other. Returns the
// nodes added.
std::size_t recompute_windows(Program& program);

// Recomputes attention's probabilities (a forward softmax along the last axis of a batched value,
// and the values made from it element by element or reshaped: its 16-bit copy, its dropout)
// where a later phase reads them, from the values the backward pass keeps anyway (the queries and
// keys, the mask): the scores' product, scale, mask and softmax run again just before the
// probabilities' gradient, repeating at most one product each, for the same bits. Only where the
// probabilities are at least half the bytes the forward pass stores for later phases: they grow
// with the square of the sequence, so this trades one more Q K^T a layer for most of a long
// sequence's memory. Returns the nodes added.
std::size_t recompute_attention(Program& program);

// Recomputes an f32 forward value that a later phase reads, where that phase reads it, when at
// most three elementwise nodes make it from values stored for later phases anyway (leaves, static
// and single values included) or from a forward 16-bit value, which is then stored instead:
// SwiGLU's sigmoid and x * sigmoid(x) from the gate's input, a normalization's output from its
// input and statistics, a 16-bit product's widened result. The nodes are pure functions of their
// operands, so the values are the same bits. A forward slice of a value stored for later phases
// anyway (a block of attention's keys or values, in any type) is copied again where it is read
// rather than stored beside that value. Returns the nodes added.
std::size_t recompute_activations(Program& program);

// Gradient checkpointing by layers, asked for with --recompute_layers: computes every forward
// value of a layer (the element of a module list: model.transformer_decoder.layers.3) that a later
// phase reads again where that phase first reads it, from the values that leave the layer (its
// output, values the layers share) and leaves, which stay stored: the backward pass runs each
// layer's forward pass again, and the step keeps only the layers' outputs from the forward pass to
// the backward pass, not their activations. The nodes are pure functions of their operands
// (dropout draws from its key), so the values are the same bits. Returns the nodes added.
std::size_t recompute_layers(Program& program);

// Rewrites a convolution's f32 input gradient, the windows' gradient (a product as large as the
// windows) summed onto the padded input (windows_sum), as the output's gradient padded and
// convolved with the weights mirrored: a product of windows, which fuse-matmul forms a tile at a
// time, so nothing the windows' size is stored. Returns the gradients rewritten.
std::size_t convolve_gradients(Program& program);

// Groups an f32 softmax along its last axis with the elementwise nodes that compute its input
// for it alone (attention's scale and mask) and a cast of its result to 16 bits (or a dropout of
// it only the cast reads, and the cast), and an f32 softmax_grad with the elementwise nodes that
// read its result one after another (the mask, the scale, the cast to 16 bits) and a dropout that
// computes its upstream operand for it alone (attention dropout's backward), into one "softmax"
// fusion: the kernel takes each row through them while the row is in the core's cache, so
// neither the masked scores, the dropped-out values nor the f32 gradient are stored and read
// again. A softmax_grad whose softmax only the softmax's group and the gradient read, its other
// operand computed before that group (probabilities made again for the backward pass), joins the
// softmax's group: the f32 probabilities are never stored either.
std::size_t fuse_softmax(Program& program);

// Groups each matmul with its operand prologue (a transpose of the last two axes, a cast) and its
// epilogue (bias add, reshape, cast, activation) into one "matmul" fusion.
std::size_t fuse_matmuls(Program& program);

// Groups connected elementwise nodes of one shape (arithmetic, comparisons, casts, where,
// transcendentals, dropout) into "elementwise" fusions of at most kMaxElementwiseFusion nodes.
inline constexpr std::size_t kMaxElementwiseFusion = 64;
std::size_t fuse_elementwise(Program& program);

}  // namespace csrun::compiler

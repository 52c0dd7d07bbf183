#pragma once

#include <string>

#include "diagnostics.hpp"
#include "node.hpp"
#include "release.hpp"

namespace csrun::config {

// Migrations between Model Zoo releases: keys that an earlier release accepted in one place
// and a later one moved, renamed or replaced. csrun reads every release, so it applies them
// (as the Model Zoo's own config converter does) and says so in a warning.

// Moves the precision keys of a model section (mixed_precision, fp16_type, use_bfloat16,
// precision_opt_level) into `precision`: mixed_precision becomes enabled and use_bfloat16: true
// becomes fp16_type: bfloat16. `release_note`, when not empty, is the warning given for each
// key moved (legacy files keep them in the model section by design: no warning there).
void move_model_precision_keys(Node& model, Node& precision, const std::string& release_note,
                               Diagnostics& diagnostics);

// Model keys that later releases spell differently: 1.9's use_rms_norm and 1.x's
// use_t5_layer_norm become norm_type (true: rmsnorm, false: layernorm).
void migrate_model_keys(Node& model, Diagnostics& diagnostics);

// Model Zoo 1.9 to 2.4 set the T5 and Transformer training data's dynamic_loss_weight from the
// model's mlm_loss_scaling (true for precomputed_num_masked), whatever the file wrote: their
// set_defaults, then 2.4's T5Config. 2.6 and later read the key as written. `trainer` is the
// trainer tree of a file of those releases.
void derive_seq2seq_loss_weights(Node& trainer, Diagnostics& diagnostics);

// Model Zoo 2.4 and earlier ran float16 where a file names no half type (1.9 and 2.0's
// use_bfloat16: false, 2.2's set_half_dtype(fp16_type or "float16"), 2.3 and 2.4's
// MixedPrecision); 2.6 made bfloat16 the default. A trainer of a file whose keys point to 2.4 or
// earlier (`releases`) gets fp16_type: float16, so that its conversion runs alike in 2.10; where
// the keys cannot tell, a note (a warning under dynamic loss scaling, which bfloat16 drops) says
// which default csrun takes. A CPU run has only bfloat16 in every release.
void default_half_type(Node& trainer, ReleaseRange releases, Diagnostics& diagnostics);

// Legacy files of Model Zoo 2.2 and earlier switched mixed precision on with model.mixed_precision
// (default false): on CPU and GPU a run without it trained in float32 (a CS system always runs
// mixed precision). A legacy trainer of such a file (`releases`) on CPU or GPU that leaves it
// unset gets precision.enabled: false, with a note.
void full_precision_where_unset(Node& trainer, ReleaseRange releases, Diagnostics& diagnostics);

// Model Zoo 1.6's PyTorch GPT-2 had no loss_scaling: its loss was the sum over the kept tokens
// divided by the batch size, times loss_weight; 1.9 on take the tokens' mean unless
// loss_scaling: batch_size (and drop a loss_weight other than 1). A GPT trainer of a file whose
// keys point to 1.6 that weighs its loss gets loss_scaling: batch_size.
void scale_gpt_loss_by_batch(Node& trainer, ReleaseRange releases, Diagnostics& diagnostics);

// Applies the migrations of trainer-format files in place (one trainer's tree).
void migrate_trainer_tree(Node& trainer, Diagnostics& diagnostics);

}  // namespace csrun::config

#pragma once

#include "config/diagnostics.hpp"
#include "config/run_spec.hpp"

namespace csrun::data {

// Release 1.6's TensorFlow T5 and Transformer take their vocabulary sizes from the lines of the
// input's vocabulary files, where the PyTorch layout writes them in the model section. For a
// TensorFlow-layout trainer whose model leaves them out, sets model src_vocab_size (and the
// Transformer's tgt_vocab_size) from those files, in the trainer's model and its tree; a file
// that cannot be read gives the size of the vocabulary the Model Zoo ships for that processor,
// with a warning.
void read_vocabulary_sizes(config::TrainerSpec& trainer, config::Diagnostics& diagnostics);

}  // namespace csrun::data

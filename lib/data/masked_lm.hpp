#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace csrun::data {

// How BERT's masked-LM inputs are drawn from a token sequence (the Model Zoo's dynamic masking:
// masked_lm_prob of the tokens, at most max_predictions, 80 % replaced by [MASK], 10 % by a
// random token of the pool, 10 % kept).
struct MaskingRules {
  std::int64_t max_predictions = 20;
  double masked_lm_prob = 0.15;
  std::int32_t mask_id = 0;
  std::vector<bool> excluded;        // per vocabulary id: never masked ([CLS], [SEP], ...)
  std::vector<bool> continues_word;  // per vocabulary id: a "##" piece (whole-word masking)
  bool whole_word = false;
  std::vector<std::int32_t> replacements;  // the ids a random replacement draws from
};

// The masked-LM fields of one sequence: `input_ids` with the masked tokens replaced, and
// max_predictions positions (ascending), labels and weights (1 for a prediction, 0 for padding).
struct MaskedSequence {
  std::vector<std::int32_t> input_ids;
  std::vector<std::int32_t> positions;
  std::vector<std::int32_t> labels;
  std::vector<float> weights;
};

// Masks `ids` as `rules` say; the choice is a pure function of `key` (so of the seed, epoch and
// sample), never of the order samples are read in.
MaskedSequence mask_tokens(std::span<const std::int32_t> ids, const MaskingRules& rules,
                           std::uint64_t key);

}  // namespace csrun::data

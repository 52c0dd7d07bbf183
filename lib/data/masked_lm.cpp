#include "masked_lm.hpp"

#include <algorithm>
#include <cmath>

#include "graph/counter_rng.hpp"

namespace csrun::data {

namespace {

bool is_piece(std::span<const std::int32_t> ids, std::int64_t at, const MaskingRules& rules) {
  auto id = static_cast<std::size_t>(ids[static_cast<std::size_t>(at)]);
  return id < rules.continues_word.size() && rules.continues_word[id];
}

// The positions masked together with `at`: the whole word ("##" pieces joined to the word they
// continue) under whole-word masking, else `at` alone.
std::pair<std::int64_t, std::int64_t> span_of(std::span<const std::int32_t> ids, std::int64_t at,
                                              const MaskingRules& rules) {
  if (!rules.whole_word) return {at, at + 1};
  std::int64_t begin = at;
  while (begin > 0 && is_piece(ids, begin, rules))
    --begin;
  std::int64_t end = at + 1;
  while (end < static_cast<std::int64_t>(ids.size()) && is_piece(ids, end, rules))
    ++end;
  return {begin, end};
}

bool is_excluded(std::int32_t id, const MaskingRules& rules) {
  auto index = static_cast<std::size_t>(id);
  return index < rules.excluded.size() && rules.excluded[index];
}

std::vector<std::int64_t> choose_positions(std::span<const std::int32_t> ids,
                                           const MaskingRules& rules, std::uint64_t key) {
  auto count = static_cast<std::int64_t>(ids.size());
  double wanted = std::nearbyint(static_cast<double>(count) * rules.masked_lm_prob);
  std::int64_t target =
      std::min(rules.max_predictions, std::max<std::int64_t>(1, static_cast<std::int64_t>(wanted)));
  std::vector<bool> taken(ids.size(), false);
  std::vector<std::int64_t> chosen;
  for (std::int64_t candidate : graph::permutation(count, key)) {
    if (static_cast<std::int64_t>(chosen.size()) >= target) break;
    if (taken[static_cast<std::size_t>(candidate)] ||
        is_excluded(ids[static_cast<std::size_t>(candidate)], rules))
      continue;
    auto [begin, end] = span_of(ids, candidate, rules);
    for (std::int64_t p = begin; p < end; ++p)
      taken[static_cast<std::size_t>(p)] = true;
    if (static_cast<std::int64_t>(chosen.size()) + (end - begin) > rules.max_predictions) continue;
    for (std::int64_t p = begin; p < end; ++p)
      chosen.push_back(p);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace

MaskedSequence mask_tokens(std::span<const std::int32_t> ids, const MaskingRules& rules,
                           std::uint64_t key) {
  auto predictions = static_cast<std::size_t>(rules.max_predictions);
  MaskedSequence result{{ids.begin(), ids.end()},
                        std::vector<std::int32_t>(predictions, 0),
                        std::vector<std::int32_t>(predictions, 0),
                        std::vector<float>(predictions, 0.0f)};
  std::uint64_t replace_key = graph::mix_keys(key, 0x6d61736bULL);
  std::vector<std::int64_t> chosen = choose_positions(ids, rules, key);
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    auto at = static_cast<std::size_t>(chosen[i]);
    result.positions[i] = static_cast<std::int32_t>(at);
    result.labels[i] = ids[at];
    result.weights[i] = 1.0f;
    std::uint64_t draw = graph::mix_keys(replace_key, at);
    double u = graph::uniform01(draw);
    if (u < 0.8) {
      result.input_ids[at] = rules.mask_id;
    } else if (u < 0.9 && !rules.replacements.empty()) {
      double pick = graph::uniform01(graph::mix_keys(draw, 1));
      result.input_ids[at] = rules.replacements[static_cast<std::size_t>(
          pick * static_cast<double>(rules.replacements.size()))];
    }
  }
  return result;
}

}  // namespace csrun::data

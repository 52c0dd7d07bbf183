#include "param_types.hpp"

namespace csrun::config {

ValueType non_negative_number() {
  return ValueType::number({0.0, std::nullopt, false, false});
}

ValueType positive_number() {
  return ValueType::number({0.0, std::nullopt, true, false});
}

ValueType unit_interval() {
  return ValueType::number({0.0, 1.0, false, false});
}

ValueType positive_integer() {
  return ValueType::integer(1);
}

ValueType non_negative_integer() {
  return ValueType::integer(0);
}

ValueType dimension() {
  return ValueType::integer(1, kMaxDimension);
}

ValueType layer_count() {
  return ValueType::integer(1, kMaxLayers);
}

ValueType beta_pair() {
  return ValueType::list_of(ValueType::number({0.0, 1.0, false, true}), 2, 2);
}

ValueType string_or_strings() {
  return ValueType::any_of({ValueType::string(), ValueType::list_of(ValueType::string(), 1)});
}

ValueType micro_batch_size_type() {
  return ValueType::any_of(
      {positive_integer(), ValueType::choice({"auto", "explore"}), ValueType::null()});
}

ValueType memory_gibibytes() {
  return ValueType::any_of({non_negative_number(), ValueType::integer(-1, -1)});
}

}  // namespace csrun::config

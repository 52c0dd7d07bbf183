#include "accumulated_step.hpp"

#include <algorithm>
#include <stdexcept>

#include "nn/training_step.hpp"

namespace csrun::runner {

namespace {

using runtime::Executable;

constexpr std::string_view kNormalizerPrefix = "loss_normalizer/";

// A field's values over the whole batch, summed in double.
double field_sum(const data::BatchView& batch, std::size_t field, bool integer) {
  double total = 0.0;
  if (integer) {
    for (std::int32_t value : batch.integers[field])
      total += value;
  } else {
    for (float value : batch.floats[field])
      total += value;
  }
  return total;
}

void add_into(std::vector<float>& sum, std::span<const float> values, bool first) {
  if (first) {
    sum.assign(values.begin(), values.end());
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    sum[i] += values[i];
}

}  // namespace

AccumulatedStep::AccumulatedStep(Executable micro_step,
                                 const std::vector<data::SampleField>& fields, BatchSplit split,
                                 std::vector<std::string> normalizer_fields,
                                 const Executable& update)
    : micro_(std::move(micro_step)),
      inputs_(fields, micro_),
      fields_(fields),
      split_(split),
      micro_batch_index_(micro_.slot("micro_batch")),
      loss_slot_(micro_.slot("loss")) {
  const graph::Graph& graph = micro_.plan().graph;
  for (const graph::Variable& variable : graph.variables()) {
    if (variable.role == graph::VariableRole::parameter) {
      gradients_.push_back({micro_.slot(nn::gradient_name(variable.name)),
                            update.slot(nn::gradient_name(variable.name)),
                            {},
                            {}});
    }
    variables_.push_back({update.slot(variable.name), micro_.slot(variable.name)});
  }
  if (graph.find_input("grad_scaler.scale"))
    variables_.push_back({update.slot("grad_scaler.scale"), micro_.slot("grad_scaler.scale")});
  for (const std::string& name : normalizer_fields) {
    auto field = std::find_if(fields_.begin(), fields_.end(),
                              [&](const data::SampleField& f) { return f.name == name; });
    if (field == fields_.end())
      throw std::invalid_argument("the micro-step averages its loss over the batch field '" + name +
                                  "', which its batch does not have");
    normalizers_.push_back({static_cast<std::size_t>(field - fields_.begin()),
                            micro_.slot(std::string(kNormalizerPrefix) + name)});
  }
}

void AccumulatedStep::take_variables(const Executable& update) {
  for (const Copied& variable : variables_) {
    if (update.type(variable.from).dtype == graph::DType::f32) {
      micro_.write(variable.to, update.floats(variable.from));
    } else {
      std::vector<double> values = update.read(variable.from);
      micro_.write(variable.to, std::span<const double>(values));
    }
  }
}

void AccumulatedStep::write_normalizers(const data::BatchView& batch) {
  for (const Normalizer& normalizer : normalizers_) {
    float total =
        static_cast<float>(field_sum(batch, normalizer.field, fields_[normalizer.field].integer));
    micro_.write(normalizer.input, std::span<const float>(&total, 1));
  }
}

void AccumulatedStep::add_gradients(std::int64_t micro_batch) {
  for (Gradient& gradient : gradients_)
    add_into(gradient.replica_sum, micro_.floats(gradient.output), micro_batch == 0);
}

void AccumulatedStep::add_replica(std::int64_t replica) {
  if (split_.replicas == 1) return;
  for (Gradient& gradient : gradients_)
    add_into(gradient.total, gradient.replica_sum, replica == 0);
}

void AccumulatedStep::run(const data::BatchView& batch, Executable& update) {
  take_variables(update);
  write_normalizers(batch);
  loss_ = 0.0;
  std::int64_t index = 0;
  for (std::int64_t replica = 0; replica < split_.replicas; ++replica) {
    for (std::int64_t m = 0; m < split_.micro_batches_per_replica; ++m, ++index) {
      inputs_.write(micro_, batch, index * split_.micro_batch, split_.micro_batch);
      std::int32_t share = static_cast<std::int32_t>(index);
      micro_.write(micro_batch_index_, std::span<const std::int32_t>(&share, 1));
      micro_.run();
      loss_ += micro_.scalar(loss_slot_);
      add_gradients(m);
    }
    add_replica(replica);
  }
  for (const Gradient& gradient : gradients_)
    update.write(gradient.input, split_.replicas == 1 ? gradient.replica_sum : gradient.total);
  update.run();
}

}  // namespace csrun::runner

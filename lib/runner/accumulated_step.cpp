#include "accumulated_step.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "nn/scope.hpp"
#include "nn/training_step.hpp"

namespace csrun::runner {

namespace {

using runtime::Executable;

// A field's values over `rows` samples of a batch of `batch_rows` from sample `first`, summed
// in double.
double field_sum(const data::BatchView& batch, std::size_t field, bool integer, std::int64_t first,
                 std::int64_t rows, std::int64_t batch_rows) {
  auto sum_rows = [&](auto values) {
    std::size_t width = values.size() / static_cast<std::size_t>(batch_rows);
    double total = 0.0;
    for (auto value : values.subspan(static_cast<std::size_t>(first) * width,
                                     static_cast<std::size_t>(rows) * width))
      total += value;
    return total;
  };
  return integer ? sum_rows(batch.integers[field]) : sum_rows(batch.floats[field]);
}

void add_into(std::span<float> sum, std::span<const float> values, bool first) {
  if (first) {
    std::copy(values.begin(), values.end(), sum.begin());
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    sum[i] += values[i];
}

}  // namespace

AccumulatedStep::AccumulatedStep(Executable micro_step,
                                 const std::vector<data::SampleField>& fields, BatchSplit split,
                                 std::vector<std::string> normalizer_fields, Executable& update,
                                 const replicas::ReplicaGroup* group)
    : micro_(std::move(micro_step)),
      inputs_(fields, micro_),
      split_(split),
      group_(group && group->size() > 1 ? group : nullptr),
      micro_batch_index_(micro_.slot(nn::kShareIndexInput)),
      loss_slot_(micro_.slot("loss")) {
  const graph::Graph& graph = micro_.plan().graph;
  std::size_t offset = 0;
  for (const graph::Variable& variable : graph.variables()) {
    // The micro-step rounds its weights' 16-bit copies itself once the weights are taken.
    if (variable.role == graph::VariableRole::half_copy) continue;
    if (variable.role == graph::VariableRole::gradient_sum) {
      Gradient gradient{micro_.slot(variable.name), update.slot(variable.name), offset, 0};
      if (!micro_.borrowed(gradient.sum))
        throw std::logic_error("the micro-step keeps the sum '" + variable.name +
                               "' itself, not where its update reads it");
      gradient.size =
          static_cast<std::size_t>(graph::element_count(micro_.type(gradient.sum).shape));
      offset += gradient.size;
      gradients_.push_back(gradient);
      continue;
    }
    const graph::TensorType& type = graph.node(variable.node).type;
    if (type.dtype != graph::DType::f32 && graph::element_count(type.shape) != 1)
      throw std::invalid_argument("the micro-step's variable '" + variable.name +
                                  "' is neither f32 nor a scalar");
    variables_.push_back({update.slot(variable.name), micro_.slot(variable.name)});
  }
  // Each replica's micro-steps add their gradients where the update reads them; with several
  // replicas, the replicas' sums are added up beside them (in this process, or along the chain of
  // an MPI job's ranks) and written there once all are in.
  if (split_.replicas > 1) total_.resize(offset);
  if (graph.find_input("grad_scaler.scale"))
    variables_.push_back({update.slot("grad_scaler.scale"), micro_.slot("grad_scaler.scale")});
  losses_.reserve(
      static_cast<std::size_t>(split_.local_replicas * split_.micro_batches_per_replica));
  for (const std::string& name : normalizer_fields) {
    auto field = std::find_if(fields.begin(), fields.end(),
                              [&](const data::SampleField& f) { return f.name == name; });
    if (field == fields.end())
      throw std::invalid_argument("the micro-step averages its loss over the batch field '" + name +
                                  "', which its batch does not have");
    normalizers_.push_back({static_cast<std::size_t>(field - fields.begin()), field->integer,
                            micro_.slot(nn::loss_normalizer_name(name))});
  }
  normalizer_sums_.resize(normalizers_.size());
}

void AccumulatedStep::take_variables(const Executable& update) {
  for (const Copied& variable : variables_) {
    if (micro_.borrowed(variable.to)) {
      micro_.changed(variable.to);
    } else if (update.type(variable.from).dtype == graph::DType::f32) {
      micro_.write(variable.to, update.floats(variable.from));
    } else {
      // The step counters: scalars, copied without allocating.
      double value = update.scalar(variable.from);
      micro_.write(variable.to, std::span<const double>(&value, 1));
    }
  }
}

// The loss normalizers are sums over the whole global batch: each replica's share is summed, the
// shares are added in replica order, and under MPI the ranks add theirs along the chain, which
// gives every rank the same totals as one process.
void AccumulatedStep::write_normalizers(std::span<const data::BatchView* const> shares) {
  if (normalizers_.empty() || split_.accumulated_batch > 0) return;
  std::fill(normalizer_sums_.begin(), normalizer_sums_.end(), 0.0);
  if (group_) group_->receive_sum(std::span(normalizer_sums_));
  std::int64_t rows = split_.micro_batch * split_.micro_batches_per_replica;
  for (const data::BatchView* share : shares) {
    for (std::size_t n = 0; n < normalizers_.size(); ++n)
      normalizer_sums_[n] +=
          field_sum(*share, normalizers_[n].field, normalizers_[n].integer, 0, rows, rows);
  }
  if (group_) {
    group_->pass_sum(std::span<const double>(normalizer_sums_));
    group_->share_total(std::span(normalizer_sums_));
  }
  write_normalizer_inputs(1.0);
}

// Gradient accumulation: the written batch that starts at sample `first` of the share, its
// sums times the batches per step (a micro-step's loss is its batch's, divided by their number).
void AccumulatedStep::write_accumulated_normalizers(const data::BatchView& share,
                                                    std::int64_t first) {
  std::int64_t rows = split_.micro_batch * split_.micro_batches_per_replica;
  for (std::size_t n = 0; n < normalizers_.size(); ++n) {
    normalizer_sums_[n] = field_sum(share, normalizers_[n].field, normalizers_[n].integer, first,
                                    split_.accumulated_batch, rows);
  }
  write_normalizer_inputs(static_cast<double>(rows / split_.accumulated_batch));
}

void AccumulatedStep::write_normalizer_inputs(double scale) {
  for (std::size_t n = 0; n < normalizers_.size(); ++n) {
    auto total = static_cast<float>(normalizer_sums_[n] * scale);
    micro_.write(normalizers_[n].input, std::span<const float>(&total, 1));
  }
}

// -0.0 + x is x for every x, +0.0 and -0.0 included: a replica's first micro-step leaves its
// gradients' bits as they are.
void AccumulatedStep::start_sums(Executable& update) {
  for (const Gradient& gradient : gradients_) {
    std::span<float> sum = update.floats_to_write(gradient.input);
    std::fill(sum.begin(), sum.end(), -0.0f);
  }
}

// Adds the sums the update's inputs hold (one replica's) into total_.
void AccumulatedStep::add_to_total(bool first, const Executable& update) {
  for (const Gradient& gradient : gradients_) {
    add_into(std::span(total_).subspan(gradient.offset, gradient.size),
             update.floats(gradient.input), first);
  }
}

// The replica's micro-batches in order, each micro-step adding its gradients to the update's
// inputs.
void AccumulatedStep::run_replica(const data::BatchView& share, std::int64_t replica,
                                  Executable& update) {
  start_sums(update);
  for (std::int64_t m = 0; m < split_.micro_batches_per_replica; ++m) {
    std::int64_t index = replica * split_.micro_batches_per_replica + m;
    std::int64_t first = m * split_.micro_batch;
    if (split_.accumulated_batch > 0 && !normalizers_.empty() &&
        first % split_.accumulated_batch == 0)
      write_accumulated_normalizers(share, first);
    inputs_.write(micro_, share, first, split_.micro_batch);
    auto micro_step = static_cast<std::int32_t>(index);
    micro_.write(micro_batch_index_, std::span<const std::int32_t>(&micro_step, 1));
    micro_.run();
    losses_.push_back(micro_.scalar(loss_slot_));
  }
}

// Rank r (one replica each) adds its sum to the ranks' before it, in the order one process adds
// its replicas, and passes the sum on; the last rank's total (and loss) reaches every rank.
void AccumulatedStep::combine_ranks(const Executable& update) {
  auto start = std::chrono::steady_clock::now();
  double loss = 0.0;
  group_->receive_sum(std::span(total_));
  group_->receive_sum(std::span(&loss, 1));
  add_to_total(group_->rank() == 0, update);
  for (double share : losses_)
    loss += share;
  group_->pass_sum(std::span<const float>(total_));
  group_->pass_sum(std::span<const double>(&loss, 1));
  group_->share_total(std::span(total_));
  group_->share_total(std::span(&loss, 1));
  loss_ = loss;
  combining_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void AccumulatedStep::run(std::span<const data::BatchView* const> shares, Executable& update,
                          const std::function<void()>& before_state_changes) {
  if (static_cast<std::int64_t>(shares.size()) != split_.local_replicas)
    throw std::logic_error("a step of " + std::to_string(split_.local_replicas) +
                           " replicas is given " + std::to_string(shares.size()) + " shares");
  take_variables(update);
  write_normalizers(shares);
  losses_.clear();
  for (std::int64_t j = 0; j < split_.local_replicas; ++j) {
    std::int64_t replica = split_.first_replica + j;
    run_replica(*shares[static_cast<std::size_t>(j)], replica, update);
    if (!group_ && split_.replicas > 1) add_to_total(replica == 0, update);
  }
  if (group_) {
    combine_ranks(update);
  } else {
    loss_ = 0.0;
    for (double share : losses_)
      loss_ += share;
  }
  if (split_.replicas > 1) {
    for (const Gradient& gradient : gradients_)
      update.write(gradient.input, std::span(total_).subspan(gradient.offset, gradient.size));
  }
  update.run(before_state_changes);
}

}  // namespace csrun::runner

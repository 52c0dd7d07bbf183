#include <algorithm>

#include "mapping_steps.hpp"

namespace csrun::wafer {

namespace {

using graph::NodeId;
using graph::Phase;

Phase kernel_phase(const compiler::Plan& plan, const compiler::Kernel& kernel) {
  return plan.graph.node(kernel.nodes.back()).phase;
}

class DemandBuilder {
 public:
  DemandBuilder(const compiler::Plan& plan, const LayerMap& layers)
      : plan_(plan), layers_(layers), reader_phase_(plan.graph.size(), -1) {
    for (const compiler::Kernel& kernel : plan.kernels) {
      if (kernel.at_load) continue;
      int phase = static_cast<int>(kernel_phase(plan, kernel));
      for (NodeId operand : kernel.operands) {
        int& latest = reader_phase_[static_cast<std::size_t>(operand)];
        latest = std::max(latest, phase);
      }
    }
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
      if (kernel_phase(plan, plan.kernels[k]) == Phase::forward)
        forward_layers_ = std::max(forward_layers_, layers.layer_of_kernel[k] + 1);
    }
  }

  SramDemand run() {
    SramDemand demand;
    demand.kernel_bytes.assign(plan_.kernels.size(), 0);
    add_resident_values(demand);
    for (std::size_t k = 0; k < plan_.kernels.size(); ++k) {
      if (!plan_.kernels[k].at_load) demand.kernel_bytes[k] += result_bytes(k);
    }
    for (std::int64_t bytes : demand.kernel_bytes)
      demand.pipelined += bytes;
    demand.activations = streaming_activations();
    for (std::int64_t elements : layers_.streamed)
      demand.largest_layer_weights = std::max(demand.largest_layer_weights, elements * 2);
    return demand;
  }

 private:
  const compiler::Buffer* buffer_of(NodeId id) const {
    std::int32_t index = plan_.memory.buffer_of[static_cast<std::size_t>(id)];
    return index < 0 ? nullptr : &plan_.memory.buffers[static_cast<std::size_t>(index)];
  }

  // Variables and static values live in the region of the first kernel that reads them.
  void add_resident_values(SramDemand& demand) const {
    std::vector<bool> placed(plan_.graph.size(), false);
    for (std::size_t k = 0; k < plan_.kernels.size(); ++k) {
      if (plan_.kernels[k].at_load) continue;
      for (NodeId operand : plan_.kernels[k].operands) {
        const compiler::Buffer* buffer = buffer_of(operand);
        if (!buffer || buffer->kind == compiler::BufferKind::temporary ||
            buffer->kind == compiler::BufferKind::input ||
            placed[static_cast<std::size_t>(buffer->value)])
          continue;
        placed[static_cast<std::size_t>(buffer->value)] = true;
        demand.kernel_bytes[k] += buffer->bytes;
      }
    }
  }

  // A kernel's results for the samples in flight: a forward activation the backward pass reads
  // waits for every layer after it to go forward and back; other values pass within a step or
  // two (double-buffered); what the update reads (weight gradients) is held whole.
  std::int64_t result_bytes(std::size_t k) const {
    const compiler::Kernel& kernel = plan_.kernels[k];
    Phase phase = kernel_phase(plan_, kernel);
    auto batch = std::max<std::int64_t>(plan_.batch_size, 1);
    std::int64_t total = 0;
    for (NodeId result : kernel.results) {
      const compiler::Buffer* buffer = buffer_of(result);
      if (!buffer || buffer->value != result || buffer->kind != compiler::BufferKind::temporary)
        continue;
      int reader = reader_phase_[static_cast<std::size_t>(result)];
      if (phase == Phase::update || reader == static_cast<int>(Phase::update)) {
        total += buffer->bytes;
        continue;
      }
      std::int64_t in_flight = 2;
      if (phase == Phase::forward && reader == static_cast<int>(Phase::backward)) {
        std::int64_t later = forward_layers_ - layers_.layer_of_kernel[k] - 1;
        in_flight = 2 * later + 1;
      }
      total += buffer->bytes / batch * std::min(batch, in_flight);
    }
    return total;
  }

  // The peak of activations live at once when the wafer runs forward and backward kernels;
  // gradients leave as the update (in MemoryX) reads them, so update reads do not count.
  std::int64_t streaming_activations() const {
    std::size_t positions = plan_.kernels.size() + 1;
    std::vector<std::int32_t> last_wafer_read(plan_.memory.buffers.size(), -1);
    for (std::size_t k = 0; k < plan_.kernels.size(); ++k) {
      const compiler::Kernel& kernel = plan_.kernels[k];
      if (kernel.at_load || kernel_phase(plan_, kernel) == Phase::update) continue;
      for (NodeId operand : kernel.operands) {
        std::int32_t index = plan_.memory.buffer_of[static_cast<std::size_t>(operand)];
        if (index >= 0)
          last_wafer_read[static_cast<std::size_t>(index)] = static_cast<std::int32_t>(k);
      }
    }
    std::vector<std::int64_t> change(positions + 1, 0);
    for (std::size_t b = 0; b < plan_.memory.buffers.size(); ++b) {
      const compiler::Buffer& buffer = plan_.memory.buffers[b];
      if (buffer.kind != compiler::BufferKind::temporary) continue;
      const compiler::Kernel& producer = plan_.kernels[static_cast<std::size_t>(buffer.first_use)];
      if (kernel_phase(plan_, producer) == Phase::update) continue;
      std::int32_t end = std::max(buffer.first_use, last_wafer_read[b]);
      change[static_cast<std::size_t>(buffer.first_use)] += buffer.bytes;
      change[static_cast<std::size_t>(end) + 1] -= buffer.bytes;
    }
    std::int64_t live = 0;
    std::int64_t peak = 0;
    for (std::int64_t delta : change) {
      live += delta;
      peak = std::max(peak, live);
    }
    return peak;
  }

  const compiler::Plan& plan_;
  const LayerMap& layers_;
  std::vector<int> reader_phase_;  // per node: the latest phase of a kernel that reads it
  std::int32_t forward_layers_ = 0;
};

}  // namespace

SramDemand sram_demand(const compiler::Plan& plan, const LayerMap& layers) {
  return DemandBuilder(plan, layers).run();
}

}  // namespace csrun::wafer

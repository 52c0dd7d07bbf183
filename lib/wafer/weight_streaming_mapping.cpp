#include <algorithm>
#include <cmath>

#include "mapping_steps.hpp"

namespace csrun::wafer {

namespace {

using graph::Phase;

class StreamingSchedule {
 public:
  StreamingSchedule(const MappingInputs& in, const ActivationPlan& activations)
      : in_(in),
        profile_(in.profile),
        activations_(activations),
        micro_batch_(activations.micro_batch) {}

  compiler::WaferMapping run() {
    compiler::WaferMapping mapping;
    mapping.mode = compiler::ExecutionMode::weight_streaming;
    mapping.kernels.assign(in_.plan.kernels.size(), {});
    std::vector<compiler::LayerTiming> layers = layer_rows();
    time_kernels(mapping, layers);
    finish_layers(layers);
    estimate(mapping, layers);
    mapping.layers = std::move(layers);
    return mapping;
  }

 private:
  bool training() const { return in_.plan.step == compiler::StepKind::train; }

  std::vector<compiler::LayerTiming> layer_rows() const {
    std::vector<compiler::LayerTiming> layers(in_.layers.names.size());
    for (std::size_t l = 0; l < layers.size(); ++l) {
      layers[l].name = in_.layers.names[l];
      layers[l].parameters = in_.layers.parameters[l];
      // 16-bit weights in, and (training) 16-bit gradients out, over system I/O.
      double bytes = static_cast<double>(in_.layers.streamed[l]) * 2.0;
      layers[l].weight_seconds = bytes / profile_.io_bytes_per_second;
      layers[l].gradient_seconds = training() ? layers[l].weight_seconds : 0.0;
    }
    return layers;
  }

  // Each kernel runs on the whole wafer, over one micro-batch. The update's kernels run in
  // MemoryX next to the weights, overlapped with the streaming: they take no wafer time.
  void time_kernels(compiler::WaferMapping& mapping,
                    std::vector<compiler::LayerTiming>& layers) const {
    double factor = static_cast<double>(micro_batch_) /
                    static_cast<double>(std::max<std::int64_t>(in_.plan.batch_size, 1));
    compiler::Region wafer{0, 0, profile_.width, profile_.height};
    for (std::size_t k = 0; k < in_.plan.kernels.size(); ++k) {
      const compiler::Kernel& kernel = in_.plan.kernels[k];
      Phase phase = in_.plan.graph.node(kernel.nodes.back()).phase;
      if (kernel.at_load || phase == Phase::update) continue;
      KernelTime time =
          kernel_time(profile_, in_.work[k].scaled(factor), profile_.width, profile_.height);
      mapping.kernels[k] = {wafer, time.seconds(profile_), time.bound};
      compiler::LayerTiming& layer =
          layers[static_cast<std::size_t>(in_.layers.layer_of_kernel[k])];
      ++layer.kernels;
      (phase == Phase::forward ? layer.forward_seconds : layer.backward_seconds) +=
          mapping.kernels[k].seconds;
    }
  }

  // A layer's pass takes its compute or its weights' transfer, whichever is longer: the next
  // layer's weights stream in while this one computes. Backward needs the weights again and
  // sends the gradients out at the same time.
  void finish_layers(std::vector<compiler::LayerTiming>& layers) const {
    for (compiler::LayerTiming& layer : layers) {
      layer.pes = layer.kernels > 0 ? profile_.pes() : 0;
      double forward = std::max(layer.forward_seconds, layer.weight_seconds);
      double backward = training()
                            ? std::max(layer.backward_seconds,
                                       std::max(layer.weight_seconds, layer.gradient_seconds))
                            : 0.0;
      if (layer.kernels == 0 && layer.parameters == 0) forward = backward = 0.0;
      layer.seconds = forward + backward;
      double compute = layer.forward_seconds + layer.backward_seconds;
      layer.bound = compute >= layer.seconds ? "compute" : "weight I/O";
    }
  }

  void estimate(compiler::WaferMapping& mapping,
                const std::vector<compiler::LayerTiming>& layers) const {
    double micro_step = 0.0;
    double compute = 0.0;
    const compiler::LayerTiming* slowest = nullptr;
    for (const compiler::LayerTiming& layer : layers) {
      micro_step += layer.seconds;
      compute += layer.forward_seconds + layer.backward_seconds;
      if (!slowest || layer.seconds > slowest->seconds) slowest = &layer;
    }
    std::int64_t micro_batches = std::max<std::int64_t>(in_.system_batch / micro_batch_, 1);
    // Activations that do not fit go out to the activation servers during the forward pass and
    // come back for the backward pass, over system I/O.
    micro_step += 2.0 * static_cast<double>(activations_.spilled) / profile_.io_bytes_per_second;
    if (activations_.recompute) {
      for (const compiler::LayerTiming& layer : layers)
        micro_step += layer.forward_seconds;
    }
    // At the step's end the updated weights of the first layer must come back before the next
    // step can start.
    double first_weights = layers.empty() ? 0.0 : layers.front().weight_seconds;
    compiler::Estimate& e = mapping.estimate;
    e.micro_batch_size = micro_batch_;
    e.micro_batches = micro_batches;
    e.step_seconds = static_cast<double>(micro_batches) * micro_step + first_weights +
                     profile_.step_overhead_seconds;
    e.pe_utilization = static_cast<double>(micro_batches) * compute / e.step_seconds;
    e.sram_bytes = activations_.need - activations_.spilled;
    e.sram_capacity = profile_.usable_sram();
    e.spilled_bytes = activations_.spilled;
    e.recompute = activations_.recompute;
    if (slowest) {
      e.bottleneck = slowest->name + " (" + slowest->bound + "-bound, " +
                     std::to_string(slowest->seconds * 1e3) + " ms per micro-batch)";
    }
    // Data parallel: SwarmX broadcasts each layer's weights to every system and reduces its
    // gradients, a tree whose depth grows with log(num_csx).
    int levels = swarmx_levels(in_.num_csx, profile_.swarmx_fan_out);
    double per_layer = (training() ? 2.0 : 1.0) * levels * profile_.swarmx_level_seconds;
    e.cluster_step_seconds = e.step_seconds + static_cast<double>(micro_batches) *
                                                  static_cast<double>(layers.size()) * per_layer;
  }

  const MappingInputs& in_;
  const WaferProfile& profile_;
  ActivationPlan activations_;
  std::int64_t micro_batch_;
};

}  // namespace

int swarmx_levels(std::int64_t systems, int fan_out) {
  int levels = 0;
  for (std::int64_t reach = 1; reach < systems; reach *= fan_out)
    ++levels;
  return levels;
}

compiler::WaferMapping map_weight_streaming(const MappingInputs& in,
                                            const ActivationPlan& activations) {
  return StreamingSchedule(in, activations).run();
}

}  // namespace csrun::wafer

#include <algorithm>
#include <cmath>

#include "mapping_steps.hpp"
#include "wafer_mapping.hpp"

namespace csrun::wafer {

namespace {

using compiler::Region;
using graph::Phase;

// A kernel of the pipeline: everything but views (which share buffers and take no PEs) and the
// kernels run at load.
bool takes_pes(const compiler::Kernel& kernel, const KernelWork& work) {
  return !kernel.at_load && work.model != compiler::CostModel::view;
}

class PipelinePlacer {
 public:
  explicit PipelinePlacer(const MappingInputs& in) : in_(in), profile_(in.profile) {
    for (std::size_t k = 0; k < in.plan.kernels.size(); ++k) {
      if (takes_pes(in.plan.kernels[k], in.work[k])) placed_.push_back(k);
    }
  }

  compiler::WaferMapping run() {
    compiler::WaferMapping mapping;
    mapping.mode = compiler::ExecutionMode::pipelined;
    mapping.kernels.assign(in_.plan.kernels.size(), {});
    std::vector<double> areas = balanced_areas();
    std::vector<Region> regions = pack(areas);
    for (std::size_t i = 0; i < placed_.size(); ++i) {
      std::size_t k = placed_[i];
      KernelTime time = kernel_time(profile_, in_.work[k], regions[i].width, regions[i].height);
      mapping.kernels[k] = {regions[i], time.seconds(profile_), time.bound};
      latency_seconds_ += time.latency_cycles / profile_.clock_hz;
    }
    estimate(mapping);
    return mapping;
  }

 private:
  // PEs a kernel needs for what it holds.
  double minimum_area(std::size_t k) const {
    double bytes = static_cast<double>(in_.demand.kernel_bytes[k]);
    return std::max(1.0, std::ceil(bytes / static_cast<double>(profile_.usable_sram_per_pe)));
  }

  // Cycles of the kernel's work on a single PE: the part more PEs divide.
  double work_on_one_pe(std::size_t k) const {
    KernelTime one = kernel_time(profile_, in_.work[k], 1, 1);
    return std::max(one.cycles - one.latency_cycles, 1.0);
  }

  bool is_update(std::size_t k) const {
    return in_.plan.graph.node(in_.plan.kernels[k].nodes.back()).phase == Phase::update;
  }

  // Areas in whole PEs that equalize the kernels' times (area proportional to work) on the
  // wafer, each at least what its data needs: a search for the largest scale that fits.
  // Forward and backward stages run side by side, the update after them: splitting the wafer
  // between the two groups in the ratio of the square roots of their work minimizes the sum of
  // their times, so the update's work counts scaled by sqrt(forward-backward work / its work).
  std::vector<double> balanced_areas() const {
    std::vector<double> minimum;
    std::vector<double> work;
    double streamed = 0.0;
    double updating = 0.0;
    for (std::size_t k : placed_) {
      minimum.push_back(minimum_area(k));
      work.push_back(work_on_one_pe(k));
      (is_update(k) ? updating : streamed) += work.back();
    }
    double update_weight = updating > 0.0 ? std::sqrt(std::max(streamed, 1.0) / updating) : 1.0;
    for (std::size_t i = 0; i < placed_.size(); ++i) {
      if (is_update(placed_[i])) work[i] *= update_weight;
    }
    auto area = [&](std::size_t i, double scale) {
      return std::ceil(std::max(minimum[i], work[i] * scale));
    };
    auto total = [&](double scale) {
      double sum = 0.0;
      for (std::size_t i = 0; i < work.size(); ++i)
        sum += area(i, scale);
      return sum;
    };
    auto budget = static_cast<double>(profile_.pes());
    double low = 0.0;
    double high = 1.0;
    while (total(high) < budget && high < 1e30)
      high *= 2.0;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double middle = 0.5 * (low + high);
      (total(middle) <= budget ? low : high) = middle;
    }
    std::vector<double> areas;
    for (std::size_t i = 0; i < work.size(); ++i)
      areas.push_back(area(i, low));
    return areas;
  }

  // Rectangles for the kernels by recursive bisection in kernel order: the wafer is cut across
  // its longer side in proportion to the areas on either side of the middle kernel, so every
  // kernel gets a rectangle near its area and neighbouring kernels land side by side.
  std::vector<Region> pack(const std::vector<double>& areas) const {
    if (static_cast<std::int64_t>(areas.size()) > profile_.pes()) throw too_many(areas.size());
    std::vector<double> prefix = {0.0};
    for (double area : areas)
      prefix.push_back(prefix.back() + area);
    std::vector<Region> regions(areas.size());
    slice(prefix, 0, areas.size(), {0, 0, profile_.width, profile_.height}, regions);
    return regions;
  }

  MappingError too_many(std::size_t kernels) const {
    return MappingError("the pipeline's " + std::to_string(kernels) +
                        " kernels do not fit side by side on the " +
                        std::to_string(profile_.width) + " x " + std::to_string(profile_.height) +
                        " PEs of the " + std::string(profile_.name) + "; use weight streaming");
  }

  void slice(const std::vector<double>& prefix, std::size_t begin, std::size_t end, Region region,
             std::vector<Region>& regions) const {
    if (end - begin == 1) {
      regions[begin] = region;
      return;
    }
    double total = prefix[end] - prefix[begin];
    std::size_t balanced = begin + 1;
    while (balanced + 1 < end && prefix[balanced + 1] - prefix[begin] <= total / 2.0)
      ++balanced;
    // The balanced split first; when a half would get fewer PEs than kernels, the nearest
    // split that works.
    for (std::size_t offset = 0; offset < end - begin; ++offset) {
      for (std::size_t middle : {balanced + offset, balanced - offset}) {
        if (middle <= begin || middle >= end || middle > balanced + offset) continue;
        if (split(prefix, begin, middle, end, region, regions)) return;
      }
    }
    throw too_many(end - begin);
  }

  // Cuts `region` between kernels [begin, middle) and [middle, end) across its longer side, or
  // the other when that leaves a half with fewer PEs than kernels; false when neither works.
  bool split(const std::vector<double>& prefix, std::size_t begin, std::size_t middle,
             std::size_t end, Region region, std::vector<Region>& regions) const {
    double fraction = (prefix[middle] - prefix[begin]) / (prefix[end] - prefix[begin]);
    auto first = static_cast<std::int64_t>(middle - begin);
    auto second = static_cast<std::int64_t>(end - middle);
    for (bool across_width : {region.width >= region.height, region.width < region.height}) {
      std::int32_t length = across_width ? region.width : region.height;
      std::int32_t depth = across_width ? region.height : region.width;
      auto low = static_cast<std::int32_t>((first + depth - 1) / depth);
      auto high = static_cast<std::int32_t>(length - (second + depth - 1) / depth);
      if (low > high) continue;
      auto cut = std::clamp(static_cast<std::int32_t>(std::lround(length * fraction)), low, high);
      Region a = region;
      Region b = region;
      if (across_width) {
        a.width = cut;
        b.x += cut;
        b.width -= cut;
      } else {
        a.height = cut;
        b.y += cut;
        b.height -= cut;
      }
      slice(prefix, begin, middle, a, regions);
      slice(prefix, middle, end, b, regions);
      return true;
    }
    return false;
  }

  // A batch streams through the stages: the slowest sets the pace, and the first sample's data
  // takes every stage's latency to cross the pipeline. The update runs after the batch, all
  // layers at once in their own regions.
  void estimate(compiler::WaferMapping& mapping) const {
    const compiler::Plan& plan = in_.plan;
    auto batch = static_cast<double>(std::max<std::int64_t>(plan.batch_size, 1));
    double slowest = 0.0;
    double update = 0.0;
    std::size_t bottleneck = placed_.empty() ? 0 : placed_.front();
    std::int64_t pes = 0;
    for (std::size_t k : placed_) {
      const compiler::KernelTiming& timing = mapping.kernels[k];
      pes += timing.region.pes();
      if (plan.graph.node(plan.kernels[k].nodes.back()).phase == Phase::update) {
        update = std::max(update, timing.seconds);
        continue;
      }
      if (timing.seconds > slowest) {
        slowest = timing.seconds;
        bottleneck = k;
      }
    }
    double micro_batches = static_cast<double>(in_.system_batch) / batch;
    compiler::Estimate& e = mapping.estimate;
    e.micro_batch_size = plan.batch_size;
    e.micro_batches = static_cast<std::int64_t>(micro_batches);
    e.step_seconds = micro_batches * (slowest + latency_seconds_) + update;
    e.pe_utilization = static_cast<double>(pes) / static_cast<double>(profile_.pes());
    e.sram_bytes = in_.demand.pipelined;
    e.sram_capacity = profile_.usable_sram();
    if (!placed_.empty()) {
      e.bottleneck =
          "kernel " + std::to_string(bottleneck) + " (" + plan.kernels[bottleneck].name + " in " +
          in_.layers.names[static_cast<std::size_t>(in_.layers.layer_of_kernel[bottleneck])] +
          "), " + mapping.kernels[bottleneck].bound + "-bound";
    }
    fill_layers(mapping);
  }

  void fill_layers(compiler::WaferMapping& mapping) const {
    std::vector<compiler::LayerTiming> layers(in_.layers.names.size());
    for (std::size_t l = 0; l < layers.size(); ++l) {
      layers[l].name = in_.layers.names[l];
      layers[l].parameters = in_.layers.parameters[l];
    }
    for (std::size_t k : placed_) {
      compiler::LayerTiming& layer =
          layers[static_cast<std::size_t>(in_.layers.layer_of_kernel[k])];
      const compiler::KernelTiming& timing = mapping.kernels[k];
      ++layer.kernels;
      layer.pes += timing.region.pes();
      Phase phase = in_.plan.graph.node(in_.plan.kernels[k].nodes.back()).phase;
      double& slot = phase == Phase::forward    ? layer.forward_seconds
                     : phase == Phase::backward ? layer.backward_seconds
                                                : layer.update_seconds;
      slot = std::max(slot, timing.seconds);
      if (timing.seconds >= layer.seconds) {
        layer.seconds = timing.seconds;
        layer.bound = timing.bound;
      }
    }
    mapping.layers = std::move(layers);
  }

  const MappingInputs& in_;
  const WaferProfile& profile_;
  std::vector<std::size_t> placed_;  // plan kernels that take PEs
  double latency_seconds_ = 0.0;     // summed over the placed kernels
};

}  // namespace

compiler::WaferMapping map_pipelined(const MappingInputs& in) {
  return PipelinePlacer(in).run();
}

}  // namespace csrun::wafer

#include "placement_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "layers.hpp"
#include "wafer_profile.hpp"

namespace csrun::wafer {

namespace {

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Distinct hues for neighbouring layers (the golden angle).
std::string layer_colour(std::size_t layer) {
  char text[48];
  std::snprintf(text, sizeof text, "hsl(%d, 65%%, 55%%)",
                static_cast<int>(std::fmod(static_cast<double>(layer) * 137.508, 360.0)));
  return text;
}

std::string microseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  return text;
}

class Picture {
 public:
  Picture(const compiler::Plan& plan, const WaferProfile& profile)
      : plan_(plan), mapping_(plan.mapping), profile_(profile), layers_(map_layers(plan)) {}

  std::string draw() {
    double chart_x = profile_.width + 40.0;
    double height = std::max<double>(profile_.height, 40.0 + 18.0 * mapping_.layers.size());
    svg_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"-10 -40 " << chart_x + 620 << " "
         << height + 60 << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    svg_ << "<text x=\"0\" y=\"-20\" font-size=\"16\">" << escaped(title()) << "</text>\n";
    svg_ << "<rect x=\"0\" y=\"0\" width=\"" << profile_.width << "\" height=\"" << profile_.height
         << "\" fill=\"#f4f4f4\" stroke=\"#333\"/>\n";
    if (mapping_.mode == compiler::ExecutionMode::pipelined) {
      draw_regions();
    } else {
      draw_streaming_wafer();
    }
    draw_layer_chart(chart_x);
    svg_ << "</svg>\n";
    return svg_.str();
  }

 private:
  std::string title() const {
    std::ostringstream text;
    text << profile_.name << " (" << profile_.width << " x " << profile_.height << " PEs), "
         << compiler::execution_mode_name(mapping_.mode) << ", "
         << static_cast<long long>(mapping_.estimate.samples_per_second) << " samples/s";
    return text.str();
  }

  void draw_regions() {
    for (std::size_t k = 0; k < plan_.kernels.size(); ++k) {
      const compiler::Region& region = mapping_.kernels[k].region;
      if (region.pes() == 0) continue;
      auto layer = static_cast<std::size_t>(layers_.layer_of_kernel[k]);
      svg_ << "<rect x=\"" << region.x << "\" y=\"" << region.y << "\" width=\"" << region.width
           << "\" height=\"" << region.height << "\" fill=\"" << layer_colour(layer)
           << "\" stroke=\"#222\" stroke-width=\"0.3\"><title>kernel " << k << " "
           << escaped(plan_.kernels[k].name) << " in " << escaped(layers_.names[layer]) << ": "
           << region.width << " x " << region.height << " PEs, "
           << microseconds(mapping_.kernels[k].seconds) << " per step, "
           << mapping_.kernels[k].bound << "-bound</title></rect>\n";
    }
  }

  void draw_streaming_wafer() {
    svg_ << "<rect x=\"0\" y=\"0\" width=\"" << profile_.width << "\" height=\"" << profile_.height
         << "\" fill=\"" << layer_colour(0)
         << "\" fill-opacity=\"0.35\"><title>weight streaming: every kernel of a layer runs on the "
            "whole wafer while the next layer's weights stream in</title></rect>\n";
    svg_ << "<text x=\"" << profile_.width / 2 << "\" y=\"" << profile_.height / 2
         << "\" text-anchor=\"middle\" font-size=\"20\">one layer at a time</text>\n";
  }

  // Each layer's time per step, split into compute and weight transfer.
  void draw_layer_chart(double x) {
    double longest = 0.0;
    for (const compiler::LayerTiming& layer : mapping_.layers)
      longest = std::max(longest, layer.seconds);
    if (longest <= 0.0) return;
    svg_ << "<text x=\"" << x << "\" y=\"10\">time per step by layer</text>\n";
    for (std::size_t l = 0; l < mapping_.layers.size(); ++l) {
      const compiler::LayerTiming& layer = mapping_.layers[l];
      double y = 24.0 + 18.0 * static_cast<double>(l);
      double compute = layer.forward_seconds + layer.backward_seconds + layer.update_seconds;
      if (mapping_.mode == compiler::ExecutionMode::pipelined) compute = layer.seconds;
      double width = 300.0 * std::min(compute, longest) / longest;
      double io =
          300.0 * std::min(layer.weight_seconds + layer.gradient_seconds, longest) / longest;
      svg_ << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << width
           << "\" height=\"7\" fill=\"" << layer_colour(l) << "\"><title>" << escaped(layer.name)
           << ": compute " << microseconds(compute) << "</title></rect>\n";
      if (io > 0.0) {
        svg_ << "<rect x=\"" << x << "\" y=\"" << y + 7.0 << "\" width=\"" << io
             << "\" height=\"5\" fill=\"#555\"><title>" << escaped(layer.name) << ": weights in "
             << microseconds(layer.weight_seconds) << ", gradients out "
             << microseconds(layer.gradient_seconds) << "</title></rect>\n";
      }
      svg_ << "<text x=\"" << x + 310.0 << "\" y=\"" << y + 10.0 << "\">" << escaped(layer.name)
           << " (" << layer.bound << ")</text>\n";
    }
  }

  const compiler::Plan& plan_;
  const compiler::WaferMapping& mapping_;
  const WaferProfile& profile_;
  LayerMap layers_;
  std::ostringstream svg_;
};

}  // namespace

std::string placement_svg(const compiler::Plan& plan) {
  return Picture(plan, wafer_profile(plan.mapping.wafer)).draw();
}

}  // namespace csrun::wafer

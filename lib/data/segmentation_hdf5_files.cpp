#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "data_paths.hpp"
#include "dataset.hpp"
#include "graph/types.hpp"
#include "hdf5_file.hpp"
#include "processor_registry.hpp"
#include "recent_files.hpp"

namespace csrun::data {

namespace {

using config::Diagnostics;
using config::Node;

// The Model Zoo UNet's Hdf5DataProcessor layout, as its create_hdf5_files.py writes it: every
// *.h5 file of data_dir holds a root attribute n_examples and groups example_<i>, each with an
// `image` [C, H, W] (uint8 pixels) and a `label`: [1, H, W] of 0/1 for bce, [H, W] class ids for
// ssce, [C, H, W] one-hot for multilabel_bce.
std::string example_name(std::int64_t index, const char* dataset) {
  return "example_" + std::to_string(index) + "/" + dataset;
}

// What checking a file reads: its examples and its first image's shape [C, H, W].
struct FileLayout {
  std::int64_t examples = 0;
  graph::Shape image;
};

// A file's layout, or why it is not the Model Zoo's.
std::optional<FileLayout> read_layout(const std::string& path, std::string& problem) {
  Hdf5File file(path);
  if (!file.is_open()) {
    problem = file.error();
    return {};
  }
  auto examples = file.integer_attribute("n_examples");
  if (!examples || *examples < 1) {
    problem =
        "has no positive attribute n_examples (the Model Zoo's UNet HDF5 layout: groups "
        "example_<i> with datasets image [C, H, W] and label)";
    return {};
  }
  auto image = file.dataset(example_name(0, "image"));
  if (!image || !file.has_dataset(example_name(0, "label"))) {
    problem =
        "has no datasets example_0/image and example_0/label (the Model Zoo's UNet HDF5 "
        "layout)";
    return {};
  }
  FileLayout layout{*examples, {}};
  for (std::uint64_t size : image->dims)
    layout.image.push_back(static_cast<std::int64_t>(size));
  return layout;
}

// The image as the Model Zoo's normalize_data_method leaves it (nothing when null).
void normalize(std::span<float> image, const std::string& method) {
  if (method == "zero_centered") {
    for (float& value : image)
      value = value / 127.5f - 1.0f;
  } else if (method == "zero_one") {
    for (float& value : image)
      value = value / 255.0f;
  } else if (method == "standard_score" && image.size() > 1) {
    double mean = 0.0;
    for (float value : image)
      mean += value;
    mean /= static_cast<double>(image.size());
    double squares = 0.0;
    for (float value : image)
      squares += (value - mean) * (value - mean);
    // torch.std's unbiased estimate, as the Model Zoo divides by it.
    double deviation = std::sqrt(squares / static_cast<double>(image.size() - 1));
    for (float& value : image)
      value = static_cast<float>((value - mean) / deviation);
  }
}

// The examples of every file, read where a batch needs them (HDF5 converts the stored pixels to
// float32), so memory stays flat in the set's size: the files' example counts are noted when
// the set opens, and each example's image and label are checked as they are read, naming the
// file and example.
class SegmentationDataset : public Dataset {
 public:
  SegmentationDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields)
      : fields_(fields), method_(loader_text(loader, "normalize_data_method", "")) {
    auto input = std::ranges::find(fields_, "input", &SampleField::name);
    auto labels = std::ranges::find(fields_, "labels", &SampleField::name);
    if (input == fields_.end() || labels == fields_.end())
      throw std::runtime_error("Hdf5DataProcessor feeds a segmentation model (input, labels)");
    input_ = static_cast<std::size_t>(input - fields_.begin());
    labels_ = static_cast<std::size_t>(labels - fields_.begin());
    for (const std::string& directory : loader.data_dirs) {
      for (const std::string& path : files_with_suffix(directory, ".h5"))
        add_file(path);
    }
    if (size() == 0)
      throw std::runtime_error("no examples in the .h5 files of " + loader.data_dirs.front());
  }

  std::int64_t size() const override { return first_example_.back(); }

  void read(std::int64_t index, std::int64_t, std::int64_t row, BatchData& batch) const override {
    auto after = std::upper_bound(first_example_.begin(), first_example_.end(), index);
    auto file = static_cast<std::size_t>(after - first_example_.begin() - 1);
    std::int64_t example = index - first_example_[file];
    const Hdf5File& source = open_file(file);
    const std::string& path = paths_[file];
    std::vector<float> image = read_example(source, path, example, "image", fields_[input_]);
    normalize(image, method_);
    std::int64_t pixels = fields_[input_].elements;
    std::copy(image.begin(), image.end(), batch.floats[input_].begin() + row * pixels);
    std::vector<float> label = read_example(source, path, example, "label", fields_[labels_]);
    check_label(label, path, example);
    std::int64_t width = fields_[labels_].elements;
    if (fields_[labels_].integer) {
      std::transform(label.begin(), label.end(), batch.integers[labels_].begin() + row * width,
                     [](float value) { return static_cast<std::int32_t>(value); });
    } else {
      std::copy(label.begin(), label.end(), batch.floats[labels_].begin() + row * width);
    }
  }

 private:
  void add_file(const std::string& path) {
    Hdf5File file(path);
    if (!file.is_open()) throw std::runtime_error(path + " " + file.error());
    std::int64_t examples = file.integer_attribute("n_examples").value_or(0);
    if (examples <= 0) return;
    paths_.push_back(path);
    first_example_.push_back(first_example_.back() + examples);
  }

  const Hdf5File& open_file(std::size_t file) const {
    return open_.get(file, [&] {
      auto opened = std::make_unique<Hdf5File>(paths_[file]);
      if (!opened->is_open()) throw std::runtime_error(paths_[file] + " " + opened->error());
      return opened;
    });
  }

  static std::vector<float> read_example(const Hdf5File& file, const std::string& path,
                                         std::int64_t example, const char* dataset,
                                         const SampleField& field) {
    std::string name = example_name(example, dataset);
    auto values = file.read_floats(name);
    if (!values) throw std::runtime_error(path + " has no numeric dataset '" + name + "'");
    if (static_cast<std::int64_t>(values->size()) != field.elements) {
      throw std::runtime_error(path + ": '" + name + "' holds " + std::to_string(values->size()) +
                               " values; the model's " + field.name + " takes " +
                               std::to_string(field.elements) +
                               " per example (image_shape and the loss decide)");
    }
    return std::move(*values);
  }

  // Class ids below the model's classes; binary masks of 0 and 1.
  void check_label(std::span<const float> label, const std::string& path,
                   std::int64_t example) const {
    const SampleField& field = fields_[labels_];
    double limit = field.integer ? static_cast<double>(field.limit) : 2.0;
    for (float value : label) {
      bool whole = value == std::floor(value);
      if (whole && value >= 0.0f && value < limit) continue;
      throw std::runtime_error(path + ": '" + example_name(example, "label") + "' holds " +
                               std::to_string(value) +
                               (field.integer ? "; class ids must be whole numbers in [0, " +
                                                    std::to_string(field.limit) + ") (num_classes)"
                                              : "; a binary mask holds 0 and 1"));
    }
  }

  std::vector<SampleField> fields_;
  std::string method_;
  std::size_t input_ = 0;
  std::size_t labels_ = 0;
  std::vector<std::string> paths_;
  std::vector<std::int64_t> first_example_{0};  // of each file, then the total
  mutable RecentFiles<Hdf5File> open_;
};

}  // namespace

std::unique_ptr<Dataset> open_segmentation_hdf5(const DataloaderSpec& loader,
                                                const std::vector<SampleField>& fields) {
  return std::make_unique<SegmentationDataset>(loader, fields);
}

DatasetFacts check_segmentation_hdf5_files(const DataloaderSpec& loader, Diagnostics& diagnostics) {
  const Node& at = *loader.params.find("data_dir");
  std::int64_t examples = 0;
  graph::Shape first_image;
  for (const std::string& directory : loader.data_dirs) {
    std::vector<std::string> files = require_files(directory, ".h5", at, diagnostics);
    for (const std::string& path : files) {
      std::string problem;
      auto layout = read_layout(path, problem);
      if (!layout) {
        diagnostics.error(at.mark(), at.path(), path + " " + problem);
        return {};
      }
      if (!first_image.empty() && layout->image != first_image) {
        diagnostics.error(at.mark(), at.path(),
                          path + " holds images " + graph::shape_string(layout->image) + " where " +
                              files.front() + " holds " + graph::shape_string(first_image));
        return {};
      }
      first_image = layout->image;
      examples += layout->examples;
    }
  }
  const Node* shape = loader.params.find("image_shape");
  if (shape && shape->is_list() && shape->items().size() == 3 && first_image.size() == 3) {
    graph::Shape expected;
    for (std::size_t i : {2u, 0u, 1u})
      expected.push_back(shape->items()[i].as_int());
    if (expected != first_image) {
      diagnostics.error(shape->mark(), shape->path(),
                        "image_shape [H, W, C] gives images " + graph::shape_string(expected) +
                            " [C, H, W], but the files hold " + graph::shape_string(first_image));
    }
  }
  // The Model Zoo augments unless told not to.
  const Node* augment = loader.params.find("augment_data");
  if (!augment || !augment->is_bool() || augment->as_bool()) {
    diagnostics.warning(augment ? augment->mark() : at.mark(),
                        augment ? augment->path() : at.path(),
                        "augment_data (the Model Zoo's default: true) has no effect: csrun reads "
                        "Hdf5DataProcessor's images as stored, without flips, rotations or "
                        "brightness changes; set augment_data: false to say so");
  }
  DatasetFacts facts;
  if (examples > 0) facts.samples = examples;
  return facts;
}

}  // namespace csrun::data

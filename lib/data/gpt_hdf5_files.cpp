#include <algorithm>
#include <filesystem>

#include "data_paths.hpp"
#include "hdf5_file.hpp"
#include "processor_registry.hpp"

namespace csrun::data {

namespace {

using config::Diagnostics;
using config::Node;

// Opening every file of a corpus of thousands would make validation slow; the layout of the
// first files is representative.
constexpr std::size_t kFilesChecked = 64;

struct FileLayout {
  std::uint64_t examples = 0;
  std::uint64_t sequence_length = 0;
};

// The Model Zoo's GPT HDF5 layout: dataset `data`, integer [n, 3 or 5, msl], attribute
// n_examples; or the 1.6 layout with one dataset `example_<i>` of shape [3, msl] per sample.
std::optional<FileLayout> read_layout(const std::string& path, std::string& problem) {
  Hdf5File file(path);
  if (!file.is_open()) {
    problem = file.error();
    return {};
  }
  if (auto data = file.dataset("data")) {
    if (data->dims.size() != 3 || (data->dims[1] != 3 && data->dims[1] != 5) || !data->is_integer) {
      problem =
          "has a dataset 'data' that is not an integer array [n_examples, 3, "
          "max_sequence_length] (input_ids, attention_mask, labels)";
      return {};
    }
    auto announced = file.integer_attribute("n_examples");
    if (announced && static_cast<std::uint64_t>(*announced) != data->dims[0]) {
      problem = "announces n_examples = " + std::to_string(*announced) + " but its 'data' holds " +
                std::to_string(data->dims[0]) + " examples";
      return {};
    }
    return FileLayout{data->dims[0], data->dims[2]};
  }
  if (auto example = file.dataset("example_0")) {
    auto count = file.integer_attribute("n_examples");
    if (example->dims.size() != 2 || example->dims[0] != 3 || !count) {
      problem =
          "has an 'example_0' dataset that is not [3, max_sequence_length] with an "
          "n_examples attribute";
      return {};
    }
    return FileLayout{static_cast<std::uint64_t>(*count), example->dims[1]};
  }
  problem =
      "has no dataset 'data' (the Model Zoo GPT layout: integer [n_examples, 3, "
      "max_sequence_length] with an n_examples attribute)";
  return {};
}

}  // namespace

DatasetFacts check_gpt_hdf5_files(const DataloaderSpec& loader, Diagnostics& diagnostics) {
  const Node* data_dir = loader.params.find("data_dir");
  const Node& at = data_dir ? *data_dir : *loader.params.find("mixture");
  std::uint64_t examples = 0;
  // 0 until known: from max_sequence_length, else from the first file.
  std::uint64_t length = static_cast<std::uint64_t>(loader.max_sequence_length.value_or(0));
  std::string length_source = "max_sequence_length";
  for (const std::string& directory : loader.data_dirs) {
    if (!require_directory(directory, at, diagnostics)) continue;
    std::vector<std::string> files = files_with_suffix(directory, ".h5");
    if (files.empty()) {
      diagnostics.error(at.mark(), at.path(), "no .h5 files in '" + directory + "'");
      continue;
    }
    for (std::size_t i = 0; i < files.size() && i < kFilesChecked; ++i) {
      std::string problem;
      auto layout = read_layout(files[i], problem);
      if (!layout) {
        diagnostics.error(at.mark(), at.path(), files[i] + " " + problem);
        return {};
      }
      if (length != 0 && layout->sequence_length != length) {
        diagnostics.error(at.mark(), at.path(),
                          files[i] + " holds sequences of length " +
                              std::to_string(layout->sequence_length) + " but " + length_source +
                              " is " + std::to_string(length));
        return {};
      }
      length = layout->sequence_length;
      length_source = "the first file's length";
      examples += layout->examples;
    }
  }
  bool all_checked = std::all_of(
      loader.data_dirs.begin(), loader.data_dirs.end(),
      [](const auto& d) { return files_with_suffix(d, ".h5").size() <= kFilesChecked; });
  std::optional<std::int64_t> found_length;
  if (length != 0) found_length = static_cast<std::int64_t>(length);
  if (!all_checked) return {std::nullopt, found_length};
  if (examples > 0 && examples < static_cast<std::uint64_t>(loader.batch_size)) {
    diagnostics.error(at.mark(), at.path(),
                      "the dataset holds " + std::to_string(examples) +
                          " examples, fewer than one batch of batch_size " +
                          std::to_string(loader.batch_size));
  }
  return {static_cast<std::int64_t>(examples), found_length};
}

}  // namespace csrun::data

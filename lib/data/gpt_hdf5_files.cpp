#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>

#include "data_paths.hpp"
#include "dataset.hpp"
#include "hdf5_file.hpp"
#include "processor_registry.hpp"
#include "read_only_file.hpp"
#include "recent_files.hpp"
#include "storage/host_memory.hpp"

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
  // Its tokens are contiguous little-endian int32 (h5py's and the Model Zoo's default storage):
  // csrun reads each example from the file when a batch needs it. Other storage (chunked,
  // compressed, other integer types) is read into memory when the dataset is opened.
  bool out_of_core = false;
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
    return FileLayout{data->dims[0], data->dims[2], file.contiguous_offset("data").has_value()};
  }
  if (auto example = file.dataset("example_0")) {
    auto count = file.integer_attribute("n_examples");
    if (example->dims.size() != 2 || example->dims[0] != 3 || !count) {
      problem =
          "has an 'example_0' dataset that is not [3, max_sequence_length] with an "
          "n_examples attribute";
      return {};
    }
    return FileLayout{static_cast<std::uint64_t>(*count), example->dims[1],
                      file.contiguous_offset("example_0").has_value()};
  }
  problem =
      "has no dataset 'data' (the Model Zoo GPT layout: integer [n_examples, 3, "
      "max_sequence_length] with an n_examples attribute)";
  return {};
}

// The largest input id or label among a file's first examples: what validate reads of the data
// (cheap whatever the file's size), where training reads and checks every example.
struct SampledIds {
  std::optional<IdSeen> largest;
  std::optional<IdSeen> smallest;

  void take(std::span<const std::int32_t> example, std::uint64_t length, const std::string& where) {
    for (std::uint64_t row : {0u, 2u}) {
      auto tokens = example.subspan(row * length, length);
      if (tokens.empty()) continue;
      auto [low, high] = std::ranges::minmax_element(tokens);
      merge({IdSeen{*high, where}, IdSeen{*low, where}});
    }
  }

  void merge(const SampledIds& other) {
    if (other.largest && (!largest || other.largest->id > largest->id)) largest = other.largest;
    if (other.smallest && (!smallest || other.smallest->id < smallest->id))
      smallest = other.smallest;
  }
};

SampledIds sampled_ids(const std::string& path) {
  constexpr std::uint64_t kSampled = 256;
  Hdf5File file(path);
  SampledIds ids;
  auto where = [&](std::uint64_t example) { return path + ", example " + std::to_string(example); };
  if (auto info = file.dataset("data"); info && info->dims.size() == 3) {
    auto rows = file.read_int32_rows("data", 0, kSampled);
    std::uint64_t stride = info->dims[1] * info->dims[2];
    if (!rows || stride == 0) return ids;
    for (std::uint64_t at = 0; at + stride <= rows->size(); at += stride)
      ids.take(std::span<const std::int32_t>(*rows).subspan(at, stride), info->dims[2],
               where(at / stride));
    return ids;
  }
  for (std::uint64_t e = 0; e < kSampled; ++e) {
    auto example = file.read_int32("example_" + std::to_string(e));
    if (!example) break;
    ids.take(*example, example->size() / 3, where(e));
  }
  return ids;
}

// Files whose storage csrun cannot read by offset are read whole into memory: more than this
// machine can hold is an error up front, with the figures, not an allocation failure midway.
std::string memory_problem(std::uint64_t examples, std::uint64_t length) {
  double needed = static_cast<double>(examples) * 3.0 * static_cast<double>(length) * 4.0;
  if (!storage::exceeds_usable_memory(needed, 0.5)) return {};
  return std::to_string(examples) + " examples of " + std::to_string(length) + " tokens need " +
         storage::memory_size(needed) +
         " in memory (their files are chunked, compressed or not int32, so csrun reads them "
         "whole; contiguous int32 files are read example by example), more than half of " +
         storage::usable_memory_text();
}

// Where one file's examples are read from: by offset from the file (the three token rows of
// an example lie one after the other as int32), or from its tokens read into memory.
struct GptFile {
  std::string path;
  std::uint64_t first = 0;  // the dataset's index of its first example
  // 'data': example e at base + e * stride; the 1.6 layout: at offsets[e].
  std::uint64_t base = 0;
  std::uint64_t stride = 0;
  std::vector<std::uint64_t> offsets;
  std::vector<std::int32_t> tokens;  // [examples, 3, length] when read into memory

  bool in_memory() const { return stride == 0 && offsets.empty(); }
  std::uint64_t offset(std::uint64_t example) const {
    return offsets.empty() ? base + example * stride : offsets[example];
  }
};

// The files read lately: a corpus of thousands of files is read example by example, in shuffled
// order, without opening a file per example or holding thousands open.

// Every .h5 file of the data directories: token rows of input_ids, attention_mask and labels
// ([n, 3, msl]; a 5-row layout's extra rows are not read). Contiguous int32 files are read
// example by example when a batch needs them, so memory stays flat in the dataset's size; each
// example's ids and labels are checked against the vocabulary as it is read.
class GptDataset : public Dataset {
 public:
  GptDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (fields[f].name == "input_ids") rows_[0] = f;
      if (fields[f].name == "attention_mask") rows_[1] = f;
      if (fields[f].name == "labels") rows_[2] = f;
      length_ = static_cast<std::uint64_t>(fields[f].elements);
    }
    vocabulary_ = fields[rows_[0]].limit;
    example_.resize(3 * length_);
    for (const std::string& directory : loader.data_dirs) {
      for (const std::string& path : files_with_suffix(directory, ".h5"))
        append(path);
    }
    if (examples_ == 0)
      throw std::runtime_error("no examples in the .h5 files of " + loader.data_dirs.front());
  }

  std::int64_t size() const override { return static_cast<std::int64_t>(examples_); }

  void read(std::int64_t index, std::int64_t, std::int64_t row, BatchData& batch) const override {
    auto at = static_cast<std::uint64_t>(index);
    auto file =
        std::prev(std::upper_bound(files_.begin(), files_.end(), at,
                                   [](std::uint64_t i, const GptFile& f) { return i < f.first; }));
    std::uint64_t e = at - file->first;
    std::span<const std::int32_t> example;
    if (file->in_memory()) {
      example = std::span<const std::int32_t>(file->tokens).subspan(e * 3 * length_, 3 * length_);
    } else {
      read_example(static_cast<std::size_t>(file - files_.begin()), e);
      example = example_;
    }
    check_tokens(example, file->path, e);
    for (std::size_t r = 0; r < 3; ++r) {
      std::int32_t* target =
          batch.integers[rows_[r]].data() + row * static_cast<std::int64_t>(length_);
      std::copy(example.begin() + static_cast<std::ptrdiff_t>(r * length_),
                example.begin() + static_cast<std::ptrdiff_t>((r + 1) * length_), target);
    }
  }

 private:
  void append(const std::string& path) {
    std::string problem;
    auto layout = read_layout(path, problem);
    if (!layout) throw std::runtime_error(path + " " + problem);
    if (layout->sequence_length != length_) {
      throw std::runtime_error(path + " holds sequences of length " +
                               std::to_string(layout->sequence_length) + "; the model reads " +
                               std::to_string(length_));
    }
    GptFile file;
    file.path = path;
    file.first = examples_;
    Hdf5File hdf5(path);
    if (hdf5.has_dataset("data")) {
      locate_data_layout(hdf5, *layout, file);
    } else {
      locate_example_layout(hdf5, *layout, file);
    }
    examples_ += layout->examples;
    files_.push_back(std::move(file));
  }

  // The 'data' layout [n, rows, length]: example e's three rows start at e * rows * length.
  void locate_data_layout(const Hdf5File& hdf5, const FileLayout& layout, GptFile& file) {
    auto info = hdf5.dataset("data");
    auto offset = hdf5.contiguous_offset("data");
    if (!info) throw std::runtime_error(file.path + ": its 'data' cannot be read (damaged?)");
    std::uint64_t example_bytes = info->dims[1] * length_ * 4;
    if (offset) {
      check_within_file(file.path, *offset, layout.examples, example_bytes, "its 'data'");
      file.base = *offset;
      file.stride = example_bytes;
      return;
    }
    read_into_memory(layout, file.path);
    auto data = hdf5.read_int32("data");
    if (!data) throw std::runtime_error(file.path + ": its 'data' cannot be read (damaged?)");
    for (std::uint64_t e = 0; e < layout.examples; ++e) {
      auto example =
          std::span<const std::int32_t>(*data).subspan(e * info->dims[1] * length_, 3 * length_);
      file.tokens.insert(file.tokens.end(), example.begin(), example.end());
    }
  }

  // Release 1.6's layout: one [3, max_sequence_length] dataset example_<i> per example.
  void locate_example_layout(const Hdf5File& hdf5, const FileLayout& layout, GptFile& file) {
    if (!layout.out_of_core) read_into_memory(layout, file.path);
    for (std::uint64_t e = 0; e < layout.examples; ++e) {
      std::string name = "example_" + std::to_string(e);
      auto info = hdf5.dataset(name);
      if (!info || info->dims != std::vector<std::uint64_t>{3, length_}) {
        throw std::runtime_error(file.path + ": n_examples is " + std::to_string(layout.examples) +
                                 " but '" + name + "' is missing or not [3, " +
                                 std::to_string(length_) + "]");
      }
      if (!layout.out_of_core) {
        auto example = hdf5.read_int32(name);
        if (!example) throw std::runtime_error(file.path + ": '" + name + "' cannot be read");
        file.tokens.insert(file.tokens.end(), example->begin(), example->end());
        continue;
      }
      auto offset = hdf5.contiguous_offset(name);
      if (!offset) {
        throw std::runtime_error(file.path + ": '" + name +
                                 "' is not stored as example_0 is (contiguous int32)");
      }
      check_within_file(file.path, *offset, 1, 3 * length_ * 4, "'" + name + "'");
      file.offsets.push_back(*offset);
    }
  }

  void read_into_memory(const FileLayout& layout, const std::string& path) {
    in_memory_ += layout.examples;
    std::string too_large = memory_problem(in_memory_, length_);
    if (!too_large.empty()) throw std::runtime_error(path + ": " + too_large);
  }

  // `count` pieces of `bytes` from `offset` must lie in the file (a header can announce any
  // shape; this is checked without overflowing).
  static void check_within_file(const std::string& path, std::uint64_t offset, std::uint64_t count,
                                std::uint64_t bytes, const std::string& what) {
    std::error_code error;
    std::uint64_t size = std::filesystem::file_size(path, error);
    if (!error && offset <= size && (bytes == 0 || count <= (size - offset) / bytes)) return;
    throw std::runtime_error(path + ": " + what + " (" + std::to_string(count) + " x " +
                             std::to_string(bytes) + " bytes from byte " + std::to_string(offset) +
                             ") goes past the file's end (" + std::to_string(size) +
                             " bytes): truncated?");
  }

  void read_example(std::size_t file, std::uint64_t e) const {
    const GptFile& source = files_[file];
    std::span<std::byte> bytes = std::as_writable_bytes(std::span(example_));
    open_files_.get(file, [&] { return std::make_unique<ReadOnlyFile>(source.path); })
        .read_at(source.offset(e), bytes, "example", e);
  }

  // Token ids and labels index the embedding and the softmax: one outside the vocabulary is an
  // error here, naming the example, rather than a lookup that fails mid-run or a silent zero loss.
  void check_tokens(std::span<const std::int32_t> example, const std::string& path,
                    std::uint64_t index) const {
    for (std::size_t r : {std::size_t{0}, std::size_t{2}}) {
      auto row = example.subspan(r * length_, length_);
      auto outside = std::find_if(row.begin(), row.end(), [&](std::int32_t token) {
        return token < 0 || token >= vocabulary_;
      });
      if (outside == row.end()) continue;
      throw std::runtime_error(
          path + ": example " + std::to_string(index) + " has " +
          (r == 0 ? "input_ids" : "labels") + " " + std::to_string(*outside) + " at position " +
          std::to_string(outside - row.begin()) + ", outside the vocabulary (vocab_size " +
          std::to_string(vocabulary_) + ": 0 to " + std::to_string(vocabulary_ - 1) + ")");
    }
  }

  std::array<std::size_t, 3> rows_{0, 1, 2};
  std::uint64_t length_ = 0;
  std::int64_t vocabulary_ = 0;
  std::uint64_t examples_ = 0;
  std::uint64_t in_memory_ = 0;
  std::vector<GptFile> files_;
  // One thread reads a dataset (its batch source's); these are that reader's scratch.
  mutable RecentFiles<ReadOnlyFile> open_files_;
  mutable std::vector<std::int32_t> example_;
};

}  // namespace

std::unique_ptr<Dataset> open_gpt_hdf5(const DataloaderSpec& loader,
                                       const std::vector<SampleField>& fields) {
  return std::make_unique<GptDataset>(loader, fields);
}

DatasetFacts check_gpt_hdf5_files(const DataloaderSpec& loader, Diagnostics& diagnostics) {
  const Node* data_dir = loader.params.find("data_dir");
  const Node& at = data_dir ? *data_dir : *loader.params.find("mixture");
  std::uint64_t examples = 0;
  std::uint64_t in_memory = 0;  // of files the reader reads whole
  SampledIds ids;
  // 0 until known: from max_sequence_length, else from the first file.
  std::uint64_t length = static_cast<std::uint64_t>(loader.max_sequence_length.value_or(0));
  std::string length_source = "max_sequence_length";
  bool every_directory_read = true;
  for (const std::string& directory : loader.data_dirs) {
    std::vector<std::string> files = require_files(directory, ".h5", at, diagnostics);
    if (files.empty()) {
      every_directory_read = false;
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
      if (!layout->out_of_core) in_memory += layout->examples;
    }
    ids.merge(sampled_ids(files.front()));
  }
  bool all_checked = std::all_of(
      loader.data_dirs.begin(), loader.data_dirs.end(),
      [](const auto& d) { return files_with_suffix(d, ".h5").size() <= kFilesChecked; });
  std::optional<std::int64_t> found_length;
  if (length != 0) found_length = static_cast<std::int64_t>(length);
  // A directory already reported missing or empty would only add a count of 0 to that error.
  if (!all_checked || !every_directory_read)
    return {std::nullopt, found_length, ids.largest, ids.smallest};
  if (examples < static_cast<std::uint64_t>(loader.batch_size)) {
    diagnostics.error(at.mark(), at.path(),
                      "the dataset holds " + std::to_string(examples) +
                          " examples, fewer than one batch of batch_size " +
                          std::to_string(loader.batch_size));
  }
  if (std::string too_large = memory_problem(in_memory, length); !too_large.empty())
    diagnostics.error(at.mark(), at.path(), "the dataset's " + too_large);
  return {static_cast<std::int64_t>(examples), found_length, ids.largest, ids.smallest};
}

}  // namespace csrun::data

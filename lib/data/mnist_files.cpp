#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <stdexcept>

#include "data_paths.hpp"
#include "dataset.hpp"
#include "processor_registry.hpp"
#include "read_only_file.hpp"

namespace csrun::data {

namespace {

namespace fs = std::filesystem;
using config::Diagnostics;
using config::Node;

constexpr std::uint32_t kImageMagic = 0x00000803;
constexpr std::uint32_t kLabelMagic = 0x00000801;
constexpr std::uint32_t kSide = 28;

struct IdxHeader {
  std::uint32_t magic = 0;
  std::uint32_t count = 0;
  std::uint32_t rows = 0;
  std::uint32_t columns = 0;
  std::uintmax_t file_size = 0;
};

std::uint32_t big_endian(const unsigned char* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

constexpr std::streamsize kImageHeader = 16;
constexpr std::streamsize kLabelHeader = 8;

// Nothing when the file is shorter than its header: `header_bytes` of them.
std::optional<IdxHeader> read_header(const std::string& path, std::streamsize header_bytes) {
  if (!regular_file_problem(path).empty()) return {};
  std::ifstream file(path, std::ios::binary);
  std::array<unsigned char, 16> bytes{};
  file.read(reinterpret_cast<char*>(bytes.data()), header_bytes);
  if (file.gcount() < header_bytes) return {};
  IdxHeader header;
  header.magic = big_endian(bytes.data());
  header.count = big_endian(bytes.data() + 4);
  if (header_bytes == kImageHeader) {
    header.rows = big_endian(bytes.data() + 8);
    header.columns = big_endian(bytes.data() + 12);
  }
  std::error_code error;
  header.file_size = fs::file_size(path, error);
  return header;
}

// Why an IDX file is not what MNISTDataProcessor reads, or empty when it is.
std::string images_problem(const IdxHeader& header) {
  if (header.magic != kImageMagic) return "is not an IDX image file (wrong magic number)";
  if (header.rows != kSide || header.columns != kSide) {
    return "holds " + std::to_string(header.rows) + "x" + std::to_string(header.columns) +
           " images; MNISTDataProcessor reads 28x28";
  }
  std::uintmax_t expected = 16 + std::uintmax_t{header.count} * kSide * kSide;
  if (header.file_size != expected) {
    return "is " + std::to_string(header.file_size) + " bytes but its header announces " +
           std::to_string(header.count) + " images (" + std::to_string(expected) +
           " bytes): truncated or damaged";
  }
  return {};
}

std::string labels_problem(const IdxHeader& header) {
  if (header.magic != kLabelMagic) return "is not an IDX label file (wrong magic number)";
  std::uintmax_t expected = 8 + std::uintmax_t{header.count};
  if (header.file_size != expected) {
    return "is " + std::to_string(header.file_size) + " bytes but its header announces " +
           std::to_string(header.count) + " labels: truncated or damaged";
  }
  return {};
}

// Why an IDX file's header is not what MNISTDataProcessor reads, or empty when it is.
std::string header_problem(const fs::path& path, const std::optional<IdxHeader>& header,
                           std::string (*content_problem)(const IdxHeader&)) {
  if (header) return content_problem(*header);
  std::string problem = regular_file_problem(path.string());
  if (!problem.empty()) return problem;
  return content_problem == images_problem ? "is shorter than an IDX image file's 16-byte header"
                                           : "is shorter than an IDX label file's 8-byte header";
}

std::string split_of(const DataloaderSpec& loader) {
  const Node* split = loader.params.find("split");
  if (split && split->is_string()) return split->as_string();
  return loader.role == LoaderRole::train ? "train" : "val";
}

std::pair<std::string, std::string> file_names(const DataloaderSpec& loader) {
  std::string prefix = split_of(loader) == "train" ? "train" : "t10k";
  return {prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte"};
}

// The directory holding the split's files: data_dir itself or torchvision's MNIST/raw under it.
fs::path split_directory(const DataloaderSpec& loader) {
  fs::path base = loader.data_dirs.front();
  for (const fs::path& candidate : {base, base / "MNIST" / "raw"}) {
    std::error_code error;
    if (fs::exists(candidate / file_names(loader).first, error)) return candidate;
  }
  return {};
}

// Visits the labels of an IDX label file a piece at a time (memory flat in the dataset's size):
// `visit(first, labels)` for labels first, first + 1, ...
template <class Visit>
void visit_labels(const ReadOnlyFile& file, std::uint64_t count, Visit visit) {
  constexpr std::uint64_t kPiece = 1 << 16;
  std::vector<unsigned char> piece;
  for (std::uint64_t first = 0; first < count; first += kPiece) {
    piece.resize(std::min<std::uint64_t>(kPiece, count - first));
    file.read_at(kLabelHeader + first, std::as_writable_bytes(std::span(piece)), "label", first);
    visit(first, std::span<const unsigned char>(piece));
  }
}

// The torchvision transform the Model Zoo's fc_mnist uses: ToTensor, then Normalize with
// MNIST's mean and standard deviation.
constexpr float kMean = 0.1307f;
constexpr float kStd = 0.3081f;

// The split's images and labels, read where a batch needs them (a pread of one image and one of
// its label per sample), so memory stays flat in the dataset's size; the labels are checked
// against the model's classes once, a piece of the file at a time, when the dataset opens.
class MnistDataset : public Dataset {
 public:
  MnistDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields) {
    fs::path directory = split_directory(loader);
    auto [images_name, labels_name] = file_names(loader);
    if (directory.empty())
      throw std::runtime_error("no MNIST files " + images_name + " in " + loader.data_dirs.front());
    auto images = read_header((directory / images_name).string(), kImageHeader);
    auto labels = read_header((directory / labels_name).string(), kLabelHeader);
    std::string problem = header_problem(directory / images_name, images, images_problem);
    if (problem.empty() && (!labels || !labels_problem(*labels).empty()))
      problem = "has no matching labels file " + labels_name;
    if (problem.empty() && labels->count != images->count)
      problem = "holds a different number of images than " + labels_name + " holds labels";
    if (!problem.empty())
      throw std::runtime_error((directory / images_name).string() + " " + problem);
    count_ = images->count;
    images_.emplace((directory / images_name).string());
    labels_.emplace((directory / labels_name).string());
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (fields[f].name == "input") input_field_ = f;
      if (fields[f].name == "labels") label_field_ = f;
    }
    check_labels(directory / labels_name, fields[label_field_].limit);
  }

  std::int64_t size() const override { return count_; }

  // As PyTorch's cross entropy does, a label outside the model's classes is an error, not a
  // sample that trains with no loss.
  void check_labels(const fs::path& path, std::int64_t classes) const {
    visit_labels(*labels_, count_, [&](std::uint64_t first, std::span<const unsigned char> piece) {
      auto outside = std::find_if(piece.begin(), piece.end(),
                                  [&](unsigned char label) { return label >= classes; });
      if (outside == piece.end()) return;
      throw std::runtime_error(path.string() + ": sample " +
                               std::to_string(first + (outside - piece.begin())) + " has label " +
                               std::to_string(*outside) + ", outside the model's " +
                               std::to_string(classes) + " classes (0 to " +
                               std::to_string(classes - 1) + "; num_classes)");
    });
  }

  void read(std::int64_t index, std::int64_t, std::int64_t row, BatchData& batch) const override {
    constexpr std::int64_t kPixels = kSide * kSide;
    auto sample = static_cast<std::uint64_t>(index);
    images_->read_at(kImageHeader + sample * kPixels, std::as_writable_bytes(std::span(pixels_)),
                     "image", sample);
    unsigned char label = 0;
    labels_->read_at(kLabelHeader + sample, std::as_writable_bytes(std::span(&label, 1)), "label",
                     sample);
    float* input = batch.floats[input_field_].data() + row * kPixels;
    // Computed, not looked up in a table of the 256 levels: the arithmetic vectorizes (a lookup
    // does not), and the divisions round as they would for one level at a time.
    for (std::int64_t p = 0; p < kPixels; ++p)
      input[p] = (static_cast<float>(pixels_[static_cast<std::size_t>(p)]) / 255.0f - kMean) / kStd;
    batch.integers[label_field_][static_cast<std::size_t>(row)] = label;
  }

 private:
  std::uint64_t count_ = 0;
  std::optional<ReadOnlyFile> images_;
  std::optional<ReadOnlyFile> labels_;
  mutable std::array<unsigned char, kSide * kSide> pixels_{};
  std::size_t input_field_ = 0;
  std::size_t label_field_ = 1;
};

}  // namespace

std::unique_ptr<Dataset> open_mnist(const DataloaderSpec& loader,
                                    const std::vector<SampleField>& fields) {
  return std::make_unique<MnistDataset>(loader, fields);
}

DatasetFacts check_mnist_files(const DataloaderSpec& loader, Diagnostics& diagnostics) {
  const Node& data_dir = *loader.params.find("data_dir");
  if (loader.data_dirs.empty() ||
      !require_directory(loader.data_dirs.front(), data_dir, diagnostics)) {
    return {};
  }
  auto [images_name, labels_name] = file_names(loader);
  fs::path base = loader.data_dirs.front();
  fs::path directory = split_directory(loader);
  if (directory.empty()) {
    std::error_code error;
    bool compressed = fs::exists(base / (images_name + ".gz"), error) ||
                      fs::exists(base / "MNIST" / "raw" / (images_name + ".gz"), error);
    diagnostics.error(data_dir.mark(), data_dir.path(),
                      compressed ? "the MNIST files in '" + base.string() +
                                       "' are gzip-compressed; csrun reads them uncompressed "
                                       "(gunzip them)"
                                 : "no MNIST " + split_of(loader) + " split in '" + base.string() +
                                       "': expected " + images_name + " and " + labels_name +
                                       " there (or under MNIST/raw/)");
    return {};
  }
  fs::path labels_path = directory / labels_name;
  auto images = read_header((directory / images_name).string(), kImageHeader);
  auto labels = read_header(labels_path.string(), kLabelHeader);
  std::string problem = header_problem(directory / images_name, images, images_problem);
  if (!problem.empty()) {
    diagnostics.error(data_dir.mark(), data_dir.path(),
                      (directory / images_name).string() + " " + problem);
    return {};
  }
  problem = regular_file_problem(labels_path.string()) == "does not exist"
                ? "is missing"
                : header_problem(labels_path, labels, labels_problem);
  if (!problem.empty()) {
    diagnostics.error(data_dir.mark(), data_dir.path(), labels_path.string() + " " + problem);
    return {};
  }
  if (images->count != labels->count) {
    diagnostics.error(data_dir.mark(), data_dir.path(),
                      (directory / images_name).string() + " holds " +
                          std::to_string(images->count) + " images but " + labels_path.string() +
                          " " + std::to_string(labels->count) + " labels");
    return {};
  }
  if (images->count < static_cast<std::uint64_t>(loader.batch_size)) {
    diagnostics.error(data_dir.mark(), data_dir.path(),
                      "the " + split_of(loader) + " split holds " + std::to_string(images->count) +
                          " samples, fewer than one batch of batch_size " +
                          std::to_string(loader.batch_size));
  }
  std::optional<IdSeen> largest;
  visit_labels(ReadOnlyFile(labels_path.string()), labels->count,
               [&](std::uint64_t first, std::span<const unsigned char> piece) {
                 auto most = std::ranges::max_element(piece);
                 if (most == piece.end() || (largest && *most <= largest->id)) return;
                 largest = IdSeen{*most, labels_path.string() + ", label " +
                                             std::to_string(first + (most - piece.begin()))};
               });
  return {images->count, std::nullopt, largest, std::nullopt};
}

}  // namespace csrun::data

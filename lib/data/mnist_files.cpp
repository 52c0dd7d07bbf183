#include <array>
#include <filesystem>
#include <fstream>

#include "data_paths.hpp"
#include "processor_registry.hpp"

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

std::optional<IdxHeader> read_header(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::array<unsigned char, 16> bytes{};
  file.read(reinterpret_cast<char*>(bytes.data()), bytes.size());
  if (file.gcount() < 8) return {};
  IdxHeader header;
  header.magic = big_endian(bytes.data());
  header.count = big_endian(bytes.data() + 4);
  if (file.gcount() == 16) {
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

std::string split_of(const DataloaderSpec& loader) {
  const Node* split = loader.params.find("split");
  if (split && split->is_string()) return split->as_string();
  return loader.role == LoaderRole::train ? "train" : "val";
}

}  // namespace

DatasetFacts check_mnist_files(const DataloaderSpec& loader, Diagnostics& diagnostics) {
  const Node& data_dir = *loader.params.find("data_dir");
  if (loader.data_dirs.empty() ||
      !require_directory(loader.data_dirs.front(), data_dir, diagnostics)) {
    return {};
  }
  std::string prefix = split_of(loader) == "train" ? "train" : "t10k";
  std::string images_name = prefix + "-images-idx3-ubyte";
  std::string labels_name = prefix + "-labels-idx1-ubyte";
  fs::path base = loader.data_dirs.front();
  fs::path directory;
  for (const fs::path& candidate : {base, base / "MNIST" / "raw"}) {
    if (fs::exists(candidate / images_name)) directory = candidate;
  }
  if (directory.empty()) {
    bool compressed = fs::exists(base / (images_name + ".gz")) ||
                      fs::exists(base / "MNIST" / "raw" / (images_name + ".gz"));
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
  auto images = read_header((directory / images_name).string());
  auto labels = read_header(labels_path.string());
  std::string problem = !images ? "is too short to be an IDX file" : images_problem(*images);
  if (!problem.empty()) {
    diagnostics.error(data_dir.mark(), data_dir.path(),
                      (directory / images_name).string() + " " + problem);
    return {};
  }
  problem = !fs::exists(labels_path) ? "is missing"
            : !labels                ? "is too short to be an IDX file"
                                     : labels_problem(*labels);
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
  return {images->count, std::nullopt};
}

}  // namespace csrun::data

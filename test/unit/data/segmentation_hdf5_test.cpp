// Hdf5DataProcessor: the Model Zoo UNet's HDF5 layout read, normalized and checked.
#include <catch2/catch.hpp>

#include <filesystem>

#include "checked_loader.hpp"
#include "data/hdf5_file.hpp"
#include "data/processor_registry.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;
namespace fs = std::filesystem;

namespace {

// `examples` images [1, 2, 3] of pixels first, first + 1, ... and their masks.
void write_examples(const fs::path& path, int examples, std::uint8_t first,
                    std::vector<float> mask = {0, 1, 1, 0, 0, 1}) {
  fs::create_directories(path.parent_path());
  data::Hdf5Writer writer(path.string());
  for (int e = 0; e < examples; ++e) {
    std::vector<std::uint8_t> image;
    for (std::uint8_t p = 0; p < 6; ++p)
      image.push_back(static_cast<std::uint8_t>(first + e * 6 + p));
    std::string group = "example_" + std::to_string(e);
    writer.write(group + "/image", {1, 2, 3}, std::span<const std::uint8_t>(image));
    writer.write(group + "/label", {1, 2, 3}, std::span<const float>(mask));
  }
  writer.set_attribute("n_examples", std::int64_t{examples});
  writer.close();
}

const char* kModel = "{name: unet, encoder_filters: [4, 8], decoder_filters: [4]}";

std::string loader(const fs::path& dir, const std::string& normalization = "zero_centered") {
  return "{data_processor: Hdf5DataProcessor, data_dir: " + dir.string() +
         ", batch_size: 1, image_shape: [2, 3, 1], augment_data: false, " +
         "normalize_data_method: " + normalization + "}";
}

const std::vector<data::SampleField> kFields = {{"input", false, 6, 0}, {"labels", false, 6, 0}};

}  // namespace

TEST_CASE("Hdf5DataProcessor reads every file's examples, normalized as the Model Zoo does") {
  test::TempDir dir;
  write_examples(dir.path() / "set" / "a.h5", 2, 0);
  write_examples(dir.path() / "set" / "b.h5", 1, 127);
  auto spec = test::checked_loader(kModel, loader(dir.path() / "set"));
  CHECK(spec.samples == 3);
  auto dataset = data::open_dataset(spec, kFields, 1);
  REQUIRE(dataset->size() == 3);
  data::BatchData batch(kFields, 1);
  dataset->read(2, 0, 0, batch);
  CHECK(batch.floats[0][0] == Approx(127.0f / 127.5f - 1.0f));
  CHECK(batch.floats[1] == std::vector<float>{0, 1, 1, 0, 0, 1});
  dataset->read(1, 0, 0, batch);
  CHECK(batch.floats[0][5] == Approx(11.0f / 127.5f - 1.0f));

  auto zero_one = test::checked_loader(kModel, loader(dir.path() / "set", "zero_one"));
  data::open_dataset(zero_one, kFields, 1)->read(2, 0, 0, batch);
  CHECK(batch.floats[0][1] == Approx(128.0f / 255.0f));
  // Class ids for ssce: the mask's values as integers below num_classes.
  std::vector<data::SampleField> ids = {{"input", false, 6, 0}, {"labels", true, 6, 2}};
  data::BatchData id_batch(ids, 1);
  data::open_dataset(spec, ids, 1)->read(0, 0, 0, id_batch);
  CHECK(id_batch.integers[1] == std::vector<std::int32_t>{0, 1, 1, 0, 0, 1});
}

TEST_CASE("Hdf5DataProcessor names the file, the example and what is wrong") {
  test::TempDir dir;
  write_examples(dir.path() / "good" / "a.h5", 2, 0);
  auto spec = test::checked_loader(kModel, loader(dir.path() / "good"));
  auto open_from = [&](const fs::path& where) {
    data::DataloaderSpec other = spec;
    other.data_dirs = {where.string()};
    return data::open_dataset(other, kFields, 1);
  };
  // Examples are read, and checked, when a batch needs them.
  write_examples(dir.path() / "soft" / "a.h5", 1, 0, {0, 0.5f, 1, 0, 0, 1});
  data::BatchData batch(kFields, 1);
  CHECK_THROWS_WITH(open_from(dir.path() / "soft")->read(0, 0, 0, batch),
                    Catch::Contains("a.h5: 'example_0/label' holds 0.5") &&
                        Catch::Contains("a binary mask holds 0 and 1"));
  std::vector<data::SampleField> larger = {{"input", false, 8, 0}, {"labels", false, 6, 0}};
  data::BatchData larger_batch(larger, 1);
  CHECK_THROWS_WITH(data::open_dataset(spec, larger, 1)->read(1, 0, 0, larger_batch),
                    Catch::Contains("'example_1/image' holds 6 values; the model's input takes 8"));

  auto check = [&](const fs::path& where) {
    data::DataloaderSpec other = test::checked_loader(kModel, loader(dir.path() / "good"));
    other.data_dirs = {where.string()};
    config::Diagnostics diagnostics;
    data::check_segmentation_hdf5_files(other, diagnostics);
    return diagnostics.all().empty() ? std::string() : diagnostics.all().front().to_string();
  };
  CHECK(check(dir.path() / "good").empty());
  fs::create_directories(dir.path() / "bare");
  data::Hdf5Writer((dir.path() / "bare" / "a.h5").string()).close();
  CHECK_THAT(check(dir.path() / "bare"), Catch::Contains("has no positive attribute n_examples"));
  write_examples(dir.path() / "wide" / "a.h5", 1, 0);
  data::DataloaderSpec wide = test::checked_loader(
      kModel, "{data_processor: Hdf5DataProcessor, data_dir: " + (dir.path() / "wide").string() +
                  ", batch_size: 1, image_shape: [3, 2, 1], augment_data: false}");
  config::Diagnostics diagnostics;
  data::check_segmentation_hdf5_files(wide, diagnostics);
  REQUIRE(diagnostics.has_errors());
  CHECK_THAT(diagnostics.all().front().to_string(),
             Catch::Contains("image_shape [H, W, C] gives images [1, 3, 2] [C, H, W], but the "
                             "files hold [1, 2, 3]"));
}

TEST_CASE("Hdf5DataProcessor says that augmentation has no effect unless it is off") {
  test::TempDir dir;
  write_examples(dir.path() / "set" / "a.h5", 1, 0);
  auto spec = test::checked_loader(
      kModel, "{data_processor: Hdf5DataProcessor, data_dir: " + (dir.path() / "set").string() +
                  ", batch_size: 1, image_shape: [2, 3, 1]}");
  config::Diagnostics diagnostics;
  data::check_segmentation_hdf5_files(spec, diagnostics);
  REQUIRE(diagnostics.all().size() == 1);
  CHECK_THAT(diagnostics.all().front().to_string(),
             Catch::Contains("augment_data (the Model Zoo's default: true) has no effect"));
}

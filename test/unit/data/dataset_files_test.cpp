#include <hdf5.h>
#include <catch2/catch.hpp>

#include <fstream>

#include "data/dataloader.hpp"
#include "support/params_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

std::string check_files(const std::string& loader, std::vector<std::string> processors) {
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CSX\n    model: {name: gpt2}\n"
      "    loop: {max_steps: 1}\n  fit:\n    train_dataloader: " +
      loader + "\n");
  config::Diagnostics diagnostics;
  data::DataloaderContext context{data::LoaderRole::train, 1, false, std::move(processors)};
  data::check_dataloader(loaded.trainer().fit->train_dataloader, context, diagnostics);
  std::string text;
  for (const config::Diagnostic& d : diagnostics.all()) {
    if (d.severity == config::Severity::error) text += d.message + "\n";
  }
  return text;
}

void write_be32(std::ofstream& out, std::uint32_t value) {
  unsigned char bytes[4] = {
      static_cast<unsigned char>(value >> 24), static_cast<unsigned char>(value >> 16),
      static_cast<unsigned char>(value >> 8), static_cast<unsigned char>(value)};
  out.write(reinterpret_cast<const char*>(bytes), 4);
}

void write_idx(const std::filesystem::path& dir, const std::string& prefix, std::uint32_t count,
               std::uint32_t side = 28, std::uint32_t stored = 0) {
  std::filesystem::create_directories(dir);
  std::ofstream images(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary);
  write_be32(images, 0x803);
  write_be32(images, count);
  write_be32(images, side);
  write_be32(images, side);
  images << std::string((stored ? stored : count) * side * side, '\0');
  std::ofstream labels(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary);
  write_be32(labels, 0x801);
  write_be32(labels, count);
  labels << std::string(count, '\1');
}

void write_gpt_h5(const std::string& path, hsize_t examples, hsize_t length, hsize_t features = 3,
                  long long announced = -1) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[3] = {examples, features, length};
  hid_t space = H5Screate_simple(3, dims, nullptr);
  hid_t dataset =
      H5Dcreate2(file, "data", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t attribute =
      H5Acreate2(file, "n_examples", H5T_NATIVE_LLONG, scalar, H5P_DEFAULT, H5P_DEFAULT);
  long long count = announced >= 0 ? announced : static_cast<long long>(examples);
  H5Awrite(attribute, H5T_NATIVE_LLONG, &count);
  H5Aclose(attribute);
  H5Sclose(scalar);
  H5Dclose(dataset);
  H5Sclose(space);
  H5Fclose(file);
}

const std::vector<std::string> kMnist = {"MNISTDataProcessor"};
const std::vector<std::string> kGpt = {"GptHDF5DataProcessor", "GptHDF5MapDataProcessor"};

}  // namespace

TEST_CASE("MNIST IDX files: found directly or under MNIST/raw, headers and sizes checked") {
  test::TempDir dir;
  std::string base = dir.path().string();
  CHECK(check_files("{data_dir: '" + base + "', batch_size: 4}", kMnist)
            .find("no MNIST train split") != std::string::npos);
  write_idx(dir.path() / "MNIST" / "raw", "train", 10);
  CHECK(check_files("{data_dir: '" + base + "', batch_size: 4}", kMnist).empty());
  CHECK(check_files("{data_dir: '" + base + "', batch_size: 11}", kMnist)
            .find("the train split holds 10 samples, fewer than one batch of batch_size 11") !=
        std::string::npos);
  CHECK(check_files("{data_dir: '" + base + "', split: val, batch_size: 4}", kMnist)
            .find("no MNIST val split") != std::string::npos);
  write_idx(dir.path(), "t10k", 10, 28, 5);
  CHECK(check_files("{data_dir: '" + base + "', split: val, batch_size: 4}", kMnist)
            .find("t10k-images-idx3-ubyte is 3936 bytes but its header announces 10 images") !=
        std::string::npos);
  write_idx(dir.path(), "t10k", 10, 32);
  CHECK(check_files("{data_dir: '" + base + "', split: val, batch_size: 4}", kMnist)
            .find("holds 32x32 images; MNISTDataProcessor reads 28x28") != std::string::npos);
  CHECK(check_files("{data_dir: '" + base + "/missing', batch_size: 4}", kMnist)
            .find("the directory '" + base + "/missing' does not exist") != std::string::npos);
}

TEST_CASE("GPT HDF5 files: layout, sequence length and example count") {
  test::TempDir dir;
  std::string base = dir.path().string();
  std::string loader =
      "{data_processor: GptHDF5DataProcessor, data_dir: '" + base + "', batch_size: 4";
  CHECK(check_files(loader + "}", kGpt).find("no .h5 files in") != std::string::npos);
  write_gpt_h5(base + "/a.h5", 8, 16);
  write_gpt_h5(base + "/b.h5", 8, 16);
  CHECK(check_files(loader + "}", kGpt).empty());
  CHECK(check_files(loader + ", max_sequence_length: 32}", kGpt)
            .find("a.h5 holds sequences of length 16 but max_sequence_length is 32") !=
        std::string::npos);
  CHECK(check_files(loader.substr(0, loader.size() - 1) + "64}", kGpt)
            .find("the dataset holds 16 examples, fewer than one batch of batch_size 64") !=
        std::string::npos);
  write_gpt_h5(base + "/c.h5", 8, 8);
  CHECK(check_files(loader + "}", kGpt)
            .find("c.h5 holds sequences of length 8 but the first file's length is 16") !=
        std::string::npos);
  std::filesystem::remove(base + "/c.h5");
  write_gpt_h5(base + "/d.h5", 8, 16, 3, 9);
  CHECK(check_files(loader + "}", kGpt)
            .find("announces n_examples = 9 but its 'data' holds 8 examples") != std::string::npos);
  std::filesystem::remove(base + "/d.h5");
  write_gpt_h5(base + "/e.h5", 8, 16, 2);
  CHECK(check_files(loader + "}", kGpt)
            .find("that is not an integer array [n_examples, 3, max_sequence_length]") !=
        std::string::npos);
  std::filesystem::remove(base + "/e.h5");
  std::ofstream(base + "/f.h5") << "not hdf5";
  CHECK(check_files(loader + "}", kGpt).find("f.h5 is not an HDF5 file") != std::string::npos);
}

TEST_CASE("BERT CSV: meta.dat lists the files") {
  test::TempDir dir;
  std::string base = dir.path().string();
  std::string vocab = dir.write("vocab.txt", "[PAD]\n");
  std::string loader = "{data_processor: BertCSVDynamicMaskDataProcessor, data_dir: '" + base +
                       "', vocab_file: '" + vocab + "', batch_size: 4}";
  std::vector<std::string> bert = {"BertCSVDynamicMaskDataProcessor"};
  CHECK(check_files(loader, bert)
            .find("Meta file is missing in the input directory: " + base + ".") !=
        std::string::npos);
  dir.write("meta.dat", "part-0.csv 100\npart-1.csv 50\n");
  dir.write("part-0.csv", "x");
  CHECK(check_files(loader, bert).find("line 2 lists 'part-1.csv', which is not in") !=
        std::string::npos);
  dir.write("part-1.csv", "x");
  CHECK(check_files(loader, bert).empty());
}

#include <hdf5.h>
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <fstream>

#include "data/dataloader.hpp"
#include "data/dataset.hpp"
#include "support/params_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

std::optional<data::DataloaderSpec> checked_loader(const std::string& loader,
                                                   std::vector<std::string> processors,
                                                   config::Diagnostics& diagnostics) {
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CSX\n    model: {name: gpt2}\n"
      "    loop: {max_steps: 1}\n  fit:\n    train_dataloader: " +
      loader + "\n");
  data::DataloaderContext context{data::LoaderRole::train, 1, false, std::move(processors)};
  return data::check_dataloader(loaded.trainer().fit->train_dataloader, context, diagnostics);
}

std::string check_files(const std::string& loader, std::vector<std::string> processors) {
  config::Diagnostics diagnostics;
  checked_loader(loader, std::move(processors), diagnostics);
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
               std::uint32_t side = 28, std::uint32_t stored = 0, char label = '\1') {
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
  labels << std::string(count, label);
}

void write_n_examples(hid_t file, long long count) {
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t attribute =
      H5Acreate2(file, "n_examples", H5T_NATIVE_LLONG, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attribute, H5T_NATIVE_LLONG, &count);
  H5Aclose(attribute);
  H5Sclose(scalar);
}

// Release 1.6's layout: example_<i> datasets of [3, length], token i + 1 in example i.
void write_example_h5(const std::string& path, hsize_t examples, hsize_t length) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[2] = {3, length};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  for (hsize_t i = 0; i < examples; ++i) {
    std::string name = "example_" + std::to_string(i);
    hid_t dataset =
        H5Dcreate2(file, name.c_str(), H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    std::vector<std::int32_t> tokens(3 * length, static_cast<std::int32_t>(i + 1));
    H5Dwrite(dataset, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, tokens.data());
    H5Dclose(dataset);
  }
  write_n_examples(file, static_cast<long long>(examples));
  H5Sclose(space);
  H5Fclose(file);
}

// A `data` layout file; without `write_tokens` its storage is never allocated (a sparse file).
void write_gpt_h5(const std::string& path, hsize_t examples, hsize_t length, hsize_t features = 3,
                  long long announced = -1, std::int32_t token = 0, bool write_tokens = true) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[3] = {examples, features, length};
  hid_t space = H5Screate_simple(3, dims, nullptr);
  hid_t dataset =
      H5Dcreate2(file, "data", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (write_tokens) {
    std::vector<std::int32_t> tokens(examples * features * length, token);
    H5Dwrite(dataset, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, tokens.data());
  }
  write_n_examples(file, announced >= 0 ? announced : static_cast<long long>(examples));
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

TEST_CASE("drop_last: false says how many samples an epoch leaves unread") {
  test::TempDir dir;
  write_idx(dir.path(), "train", 10);
  auto warnings = [&](const std::string& keys, int batch_size = 4) {
    config::Diagnostics diagnostics;
    checked_loader("{data_dir: '" + dir.path().string() +
                       "', batch_size: " + std::to_string(batch_size) + keys + "}",
                   kMnist, diagnostics);
    std::string text;
    for (const config::Diagnostic& d : diagnostics.all())
      if (d.severity == config::Severity::warning) text += d.message + "\n";
    return text;
  };
  CHECK(warnings(", drop_last: false") ==
        "false has no effect: every step takes a whole batch, so the last 2 of the 10 samples of "
        "each epoch are not read (batch_size 4)\n");
  CHECK(warnings(", drop_last_batch: false").find("the last 2 of the 10 samples") !=
        std::string::npos);
  CHECK(warnings("").empty());
  CHECK(warnings(", drop_last: false", 5).empty());
}

TEST_CASE("GPT HDF5 files: layout, sequence length and example count") {
  test::TempDir dir;
  std::string base = dir.path().string();
  std::string loader =
      "{data_processor: GptHDF5DataProcessor, data_dir: '" + base + "', batch_size: 4";
  // A directory that is missing or holds no file is one error, not also a dataset of 0 examples.
  CHECK(check_files(loader + "}", kGpt) == "no .h5 files in '" + base + "'\n");
  std::string missing =
      "{data_processor: GptHDF5DataProcessor, data_dir: '" + base + "/missing', batch_size: 4}";
  CHECK(check_files(missing, kGpt).find("the directory '" + base + "/missing' does not exist") ==
        0);
  CHECK(check_files(missing, kGpt).find("0 examples") == std::string::npos);
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
  // A name no file system takes is a finding, not an exception (found by the fuzz target).
  dir.write("meta.dat", std::string(5000, 'n') + ".csv 1\n");
  CHECK(check_files(loader, bert).find("which cannot be examined (File name too long)") !=
        std::string::npos);
  // Counts whose sum a 64-bit integer cannot hold are an error, not an overflow.
  dir.write("meta.dat", "part-0.csv 7777777777777777772\npart-1.csv 7777777777777777772\n");
  CHECK(check_files(loader, bert)
            .find("the meta.dat files list more examples than a 64-bit "
                  "count holds") != std::string::npos);
}

TEST_CASE("a data file that is a FIFO or has a short header is an error, never a wait") {
  test::TempDir dir;
  std::string base = dir.path().string();
  write_idx(dir.path(), "train", 10);
  std::filesystem::remove(dir.path() / "train-images-idx3-ubyte");
  REQUIRE(::mkfifo((dir.path() / "train-images-idx3-ubyte").c_str(), 0600) == 0);
  CHECK(check_files("{data_dir: '" + base + "', batch_size: 4}", kMnist)
            .find("train-images-idx3-ubyte is not a regular file (a FIFO") != std::string::npos);
  std::filesystem::remove(dir.path() / "train-images-idx3-ubyte");
  std::ofstream(dir.path() / "train-images-idx3-ubyte", std::ios::binary)
      << std::string("\0\0\x08\x03\0\0\0\x0a\0\0", 10);
  CHECK(check_files("{data_dir: '" + base + "', batch_size: 4}", kMnist)
            .find("train-images-idx3-ubyte is shorter than an IDX image file's 16-byte header") !=
        std::string::npos);
  dir.write("meta.dat", "");
  std::filesystem::remove(dir.path() / "meta.dat");
  REQUIRE(::mkfifo((dir.path() / "meta.dat").c_str(), 0600) == 0);
  std::string vocab = dir.write("vocab.txt", "[PAD]\n");
  CHECK(check_files("{data_processor: BertCSVDynamicMaskDataProcessor, data_dir: '" + base +
                        "', vocab_file: '" + vocab + "', batch_size: 4}",
                    {"BertCSVDynamicMaskDataProcessor"})
            .find("meta.dat is not a regular file") != std::string::npos);
}

TEST_CASE("labels and token ids outside the model's range stop the reader, naming the sample") {
  test::TempDir dir;
  std::string base = dir.path().string();
  write_idx(dir.path(), "train", 10, 28, 0, '\x0a');
  config::Diagnostics diagnostics;
  auto mnist = checked_loader("{data_dir: '" + base + "', batch_size: 4}", kMnist, diagnostics);
  REQUIRE(mnist);
  std::vector<data::SampleField> digits = {{"input", false, 784, 0}, {"labels", true, 1, 10}};
  CHECK_THROWS_WITH(data::open_dataset(*mnist, digits, 1),
                    Catch::Contains("train-labels-idx1-ubyte: sample 0 has label 10, outside the "
                                    "model's 10 classes (0 to 9; num_classes)"));

  std::filesystem::path gpt = dir.path() / "gpt";
  std::filesystem::create_directories(gpt);
  write_gpt_h5((gpt / "a.h5").string(), 4, 8, 3, -1, 100);
  auto tokens = checked_loader(
      "{data_processor: GptHDF5DataProcessor, data_dir: '" + gpt.string() + "', batch_size: 2}",
      kGpt, diagnostics);
  REQUIRE(tokens);
  std::vector<data::SampleField> text = {
      {"input_ids", true, 8, 100}, {"attention_mask", true, 8, 100}, {"labels", true, 8, 100}};
  // Examples are read, and checked, when a batch needs them.
  auto read_first = [&] {
    data::BatchData batch(text, 1);
    data::open_dataset(*tokens, text, 1)->read(0, 0, 0, batch);
  };
  CHECK_THROWS_WITH(read_first(),
                    Catch::Contains("a.h5: example 0 has input_ids 100 at position 0, outside the "
                                    "vocabulary (vocab_size 100: 0 to 99)"));
  text[0].limit = text[2].limit = 101;
  CHECK(data::open_dataset(*tokens, text, 1)->size() == 4);
  CHECK_NOTHROW(read_first());
}

TEST_CASE("GPT HDF5: what validate passes, the reader reads") {
  test::TempDir dir;
  auto loader = [](const std::filesystem::path& directory) {
    return "{data_processor: GptHDF5DataProcessor, data_dir: '" + directory.string() +
           "', batch_size: 2}";
  };
  std::vector<data::SampleField> text = {
      {"input_ids", true, 8, 100}, {"attention_mask", true, 8, 100}, {"labels", true, 8, 100}};
  config::Diagnostics diagnostics;

  std::filesystem::create_directories(dir.path() / "empty");
  write_gpt_h5((dir.path() / "empty" / "a.h5").string(), 0, 8);
  CHECK(check_files(loader(dir.path() / "empty"), kGpt)
            .find("the dataset holds 0 examples, fewer than one batch of batch_size 2") !=
        std::string::npos);

  std::filesystem::create_directories(dir.path() / "examples");
  write_example_h5((dir.path() / "examples" / "a.h5").string(), 3, 8);
  CHECK(check_files(loader(dir.path() / "examples"), kGpt).empty());
  auto spec = checked_loader(loader(dir.path() / "examples"), kGpt, diagnostics);
  REQUIRE(spec);
  auto dataset = data::open_dataset(*spec, text, 1);
  REQUIRE(dataset->size() == 3);
  data::BatchData batch(text, 2);
  dataset->read(2, 0, 1, batch);
  CHECK(batch.integers[0][8] == 3);
  CHECK(batch.integers[2][15] == 3);

  std::filesystem::create_directories(dir.path() / "huge");
  write_gpt_h5((dir.path() / "huge" / "a.h5").string(), 200000000, 2048, 3, -1, 0, false);
  CHECK(check_files(loader(dir.path() / "huge"), kGpt)
            .find("the dataset's 200000000 examples of 2048 tokens need 4577.6 GiB in memory") !=
        std::string::npos);
  text = {{"input_ids", true, 2048, 100},
          {"attention_mask", true, 2048, 100},
          {"labels", true, 2048, 100}};
  auto huge = checked_loader(loader(dir.path() / "huge"), kGpt, diagnostics);
  REQUIRE(huge);
  CHECK_THROWS_WITH(data::open_dataset(*huge, text, 1),
                    Catch::Contains("a.h5: 200000000 examples of 2048 tokens need 4577.6 GiB"));
}

// Data a model cannot train on is refused where it enters: validate reads what is cheap to read,
// train checks every sample before the first step; both name the file.

#include <catch2/catch.hpp>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <vector>

#include "data/hdf5_file.hpp"
#include "support/mnist_files.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using csrun::test::run_csrun;
namespace fs = std::filesystem;

namespace {

// MNIST IDX files of `count` blank images whose last label is `last_label`.
void write_mnist(const fs::path& directory, std::uint32_t count, unsigned char last_label) {
  std::vector<unsigned char> labels(count, 3);
  labels.back() = last_label;
  csrun::test::write_mnist_files(directory, std::vector<unsigned char>(count * 28 * 28, 0), labels);
}

std::string mnist_params(const fs::path& data) {
  return "trainer:\n  init:\n    device: CPU\n    model: {name: fc_mnist, hidden_sizes: [8]}\n"
         "    optimizer: {SGD: {lr: 0.1}}\n    loop: {max_steps: 2}\n  fit:\n"
         "    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 4, data_dir: '" +
         data.string() + "'}\n";
}

std::string gpt_params(const fs::path& data) {
  return "trainer:\n  init:\n    device: CPU\n    model: {name: gpt2, vocab_size: 64, hidden_size: "
         "16, num_hidden_layers: 1, num_heads: 2, filter_size: 32, max_position_embeddings: 8}\n"
         "    optimizer: {SGD: {lr: 0.1}}\n    loop: {max_steps: 2}\n  fit:\n"
         "    train_dataloader: {data_processor: GptHDF5DataProcessor, batch_size: 2, data_dir: '" +
         data.string() + "'}\n";
}

// Trains on data of hundreds of MiB: csrun train (and its data worker) must hold well under
// 128 MiB, as a reader that takes what a batch needs does.
void expect_trains_in_flat_memory(const csrun::test::TempDir& dir, const std::string& params) {
  auto train =
      run_csrun({"train", dir.write("p.yaml", params), "-o", (dir.path() / "model").string()});
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(train.peak_rss_kib < 128 * 1024);
}

}  // namespace

TEST_CASE("MNIST labels outside the model's classes fail validate and train, naming the file") {
  csrun::test::TempDir dir;
  write_mnist(dir.path() / "digits", 8, 200);
  std::string params = dir.write("p.yaml", mnist_params(dir.path() / "digits"));
  auto validate = run_csrun({"validate", params});
  CHECK(validate.exit_code == 1);
  CHECK(validate.err.find("train-labels-idx1-ubyte, label 7 holds the id 200 (a label or token), "
                          "outside the model's range 0 to 9 (num_classes)") != std::string::npos);
  auto train = run_csrun({"train", params, "-o", (dir.path() / "model").string()});
  CHECK(train.exit_code == 1);
  CHECK(train.out.find("Training completed successfully") == std::string::npos);

  write_mnist(dir.path() / "digits", 8, 9);
  auto fine = run_csrun({"train", params, "-o", (dir.path() / "model").string()});
  INFO(fine.err);
  CHECK(fine.exit_code == 0);
}

TEST_CASE(
    "GPT token ids outside the vocabulary, above or below, fail validate and train, naming file "
    "and example") {
  csrun::test::TempDir dir;
  fs::create_directories(dir.path() / "text");
  std::string file = (dir.path() / "text" / "part-0.h5").string();
  for (std::int32_t outside : {64, -1}) {
    INFO(outside);
    {
      std::vector<std::int32_t> tokens(6 * 3 * 8, 5);
      tokens[(4 * 3 + 2) * 8 + 6] = outside;  // example 4's labels, position 6
      csrun::data::Hdf5Writer writer(file);
      writer.write("data", {6, 3, 8}, tokens);
      writer.set_attribute("n_examples", std::int64_t{6});
      writer.close();
    }
    std::string params = dir.write("p.yaml", gpt_params(dir.path() / "text"));
    auto validate = run_csrun({"validate", params});
    CHECK(validate.exit_code == 1);
    CHECK(validate.err.find(file + ", example 4 holds the id " + std::to_string(outside) +
                            " (a label or token), outside the model's range 0 to 63 "
                            "(vocab_size)") != std::string::npos);
    auto train = run_csrun({"train", params, "-o", (dir.path() / "model").string()});
    CHECK(train.exit_code == 1);
  }
}

TEST_CASE("a crash inside libhdf5 names the file it was reading") {
  csrun::test::TempDir dir;
  fs::create_directories(dir.path() / "text");
  std::string file = (dir.path() / "text" / "part-0.h5").string();
  {
    csrun::data::Hdf5Writer writer(file);
    writer.write("data", {6, 3, 8}, std::vector<std::int32_t>(6 * 3 * 8, 5));
    writer.set_attribute("n_examples", std::int64_t{6});
    writer.close();
  }
  std::string params = dir.write("p.yaml", gpt_params(dir.path() / "text"));
  // Under AddressSanitizer its report of the signal would follow the note and end the process
  // with its own status: SIGSEGV keeps its default action there too.
  auto validate =
      csrun::test::run_process({"/usr/bin/env", std::string("LD_PRELOAD=") + CSRUN_HDF5_CRASH_SHIM,
                                "ASAN_OPTIONS=handle_segv=0", CSRUN_BINARY, "validate", params});
  INFO(validate.err);
  CHECK(validate.exit_code == 128 + SIGSEGV);
  CHECK(validate.err.find("csrun: SIGSEGV (invalid memory access): while libhdf5 read '" + file +
                          "' (libhdf5 can crash on a damaged HDF5 file") != std::string::npos);
}

// A corpus is read example by example (contiguous int32 files, by offset): the process holds
// what a batch needs, not the dataset. The rows are written by csrun-gpt-hdf5, which copies
// them in pieces.
TEST_CASE("a GPT dataset far larger than a run's memory trains with memory flat in its size") {
  csrun::test::TempDir dir;
  constexpr std::uint64_t kLength = 128;
  constexpr std::uint64_t kExamples = 256 * 1024 * 1024 / (3 * kLength * 4);  // 256 MiB
  fs::path rows = dir.path() / "rows.bin";
  {
    std::vector<std::int32_t> example(3 * kLength);
    for (std::uint64_t t = 0; t < kLength; ++t) {
      example[t] = static_cast<std::int32_t>(t % 64);
      example[kLength + t] = 1;
      example[2 * kLength + t] = static_cast<std::int32_t>((t + 1) % 64);
    }
    std::ofstream out(rows, std::ios::binary);
    for (std::uint64_t e = 0; e < kExamples; ++e)
      out.write(reinterpret_cast<const char*>(example.data()),
                static_cast<std::streamsize>(example.size() * sizeof(std::int32_t)));
  }
  fs::create_directories(dir.path() / "text");
  fs::path writer =
      fs::path(CSRUN_BINARY).parent_path().parent_path() / "gpt_hdf5" / "csrun-gpt-hdf5";
  auto written = csrun::test::run_process(
      {writer.string(), rows.string(), std::to_string(kLength), (dir.path() / "text" / "a.h5")});
  INFO(written.err);
  REQUIRE(written.exit_code == 0);
  fs::remove(rows);
  REQUIRE(fs::file_size(dir.path() / "text" / "a.h5") > kExamples * 3 * kLength * 4);

  std::string params = gpt_params(dir.path() / "text");
  params.replace(params.find("max_position_embeddings: 8"), 26, "max_position_embeddings: 128");
  params.replace(params.find("max_steps: 2"), 12, "max_steps: 4");
  expect_trains_in_flat_memory(dir, params);
}

// MNIST's images are read sample by sample and its labels checked a piece at a time: a split far
// larger than a run's memory trains with the process holding what a batch needs.
TEST_CASE("an MNIST split far larger than a run's memory trains with memory flat in its size") {
  csrun::test::TempDir dir;
  constexpr std::uint32_t kImages = 256 * 1024 * 1024 / (28 * 28);  // 256 MiB of images
  write_mnist(dir.path() / "digits", kImages, 7);
  std::string params = mnist_params(dir.path() / "digits");
  params.replace(params.find("max_steps: 2"), 12, "max_steps: 8");
  expect_trains_in_flat_memory(dir, params);
}

// The BERT CSV records are found at open (their offsets kept) and each read, tokenized and
// masked when a batch needs it: 256 MiB of token rows train with the process holding a batch.
TEST_CASE("a BERT CSV set far larger than a run's memory trains with memory flat in its size") {
  csrun::test::TempDir dir;
  fs::create_directories(dir.path() / "bert");
  dir.write("bert/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n");
  std::string row = "\"['[CLS]'";
  std::string segments = "\"[0";
  for (int t = 0; t < 62; ++t) {
    row += t % 2 == 0 ? ", 'the'" : ", 'cat'";
    segments += ", 0";
  }
  row += ", '[SEP]']\"," + segments + ", 0]\",0\n";
  const std::int64_t rows = 256 * 1024 * 1024 / static_cast<std::int64_t>(row.size());
  {
    std::ofstream csv(dir.path() / "bert" / "part-0.csv", std::ios::binary);
    csv << "tokens,segment_ids,is_random_next\n";
    for (std::int64_t r = 0; r < rows; ++r)
      csv << row;
  }
  dir.write("bert/meta.dat", "part-0.csv " + std::to_string(rows) + "\n");
  expect_trains_in_flat_memory(
      dir,
      "trainer:\n  init:\n    device: CPU\n    model: {name: bert, vocab_size: 10, "
      "hidden_size: 16, num_hidden_layers: 1, num_heads: 2, filter_size: 32, "
      "max_position_embeddings: 64}\n    optimizer: {SGD: {lr: 0.1}}\n"
      "    loop: {max_steps: 8}\n  fit:\n    train_dataloader: {data_processor: "
      "BertCSVDynamicMaskDataProcessor, batch_size: 4, shuffle: true, data_dir: '" +
          (dir.path() / "bert").string() + "', vocab_file: '" +
          (dir.path() / "bert" / "vocab.txt").string() +
          "', max_sequence_length: 64, max_predictions_per_seq: 10}\n");
}

// The UNet's HDF5 examples are read when a batch needs them: 8192 images of 64x64 with their
// masks (180 MB on disk, 268 MB as float32) train with the process holding a batch.
TEST_CASE("a segmentation set far larger than a run's memory trains with memory flat in its size") {
  csrun::test::TempDir dir;
  fs::create_directories(dir.path() / "shapes");
  fs::path writer =
      fs::path(CSRUN_BINARY).parent_path().parent_path() / "shapes_hdf5" / "csrun-shapes-hdf5";
  auto written = csrun::test::run_process(
      {writer.string(), (dir.path() / "shapes" / "a.h5").string(), "8192", "64", "1"});
  INFO(written.err);
  REQUIRE(written.exit_code == 0);
  expect_trains_in_flat_memory(
      dir, "train_input:\n  data_processor: Hdf5DataProcessor\n  data_dir: '" +
               (dir.path() / "shapes").string() +
               "'\n  image_shape: [64, 64, 1]\n  normalize_data_method: zero_centered\n"
               "  augment_data: False\n  shuffle: True\n  batch_size: 2\n  num_classes: 2\n"
               "model:\n  name: unet\n  encoder_filters: [4, 8]\n  decoder_filters: [4]\n"
               "  convs_per_block: ['3x3_conv']\n  norm_layer: group\n"
               "  norm_kwargs: {num_groups: 2}\n  loss: bce\n"
               "optimizer: {optimizer_type: Adam, learning_rate: 0.001}\n"
               "runconfig: {max_steps: 8, target_device: CPU}\n");
}

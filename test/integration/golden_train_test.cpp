// The golden PyTorch curves (test/data/golden/curves.json) through the whole tool: `csrun train
// --target_device CPU` on data files holding the curves' batches, from a checkpoint holding their
// initial weights, logs every step's loss within 1e-4 of PyTorch's (read back from its
// TensorBoard events). On CPU the Model Zoo turns cbfloat16 into bfloat16 and drops loss scaling,
// which leaves f32 losses unchanged; the loss-scale sequence is checked on the runtime
// (test/unit/runtime/golden_runtime_test.cpp).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/hdf5_file.hpp"
#include "runner/checkpoint.hpp"
#include "support/event_reader.hpp"
#include "support/golden_curves.hpp"
#include "support/mnist_files.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;
namespace fs = std::filesystem;

namespace {

// Every field of the curve's batches, step after step: rows of samples in the order csrun reads
// them without shuffling.
std::map<std::string, std::vector<double>> batch_rows(const test::GoldenCurve& curve) {
  std::map<std::string, std::vector<double>> rows;
  for (int step = 0; step < static_cast<int>(curve.losses.size()); ++step) {
    for (auto& [name, tensor] : test::golden_batch(curve, step))
      rows[name].insert(rows[name].end(), tensor.values.begin(), tensor.values.end());
  }
  return rows;
}

// MNIST IDX files: the normalized inputs turned back into the grey levels they came from.
std::string write_mnist(const fs::path& dir,
                        const std::map<std::string, std::vector<double>>& rows) {
  const std::vector<double>& input = rows.at("input");
  const std::vector<double>& labels = rows.at("labels");
  std::vector<unsigned char> pixels;
  for (double x : input)
    pixels.push_back(static_cast<unsigned char>(std::lround((x * 0.3081 + 0.1307) * 255.0)));
  std::vector<unsigned char> label_bytes;
  for (double label : labels)
    label_bytes.push_back(static_cast<unsigned char>(label));
  csrun::test::write_mnist_files(dir, pixels, label_bytes);
  return "{data_processor: MNISTDataProcessor, data_dir: '" + dir.string() + "'";
}

// The Model Zoo's GPT HDF5 layout: [n, 3, msl] of input_ids, attention_mask, labels.
std::string write_gpt(const fs::path& dir, const std::map<std::string, std::vector<double>>& rows,
                      std::uint64_t length) {
  std::uint64_t examples = rows.at("input_ids").size() / length;
  std::vector<std::int32_t> data;
  for (std::uint64_t e = 0; e < examples; ++e) {
    for (const char* field : {"input_ids", "attention_mask", "labels"}) {
      const std::vector<double>& values = rows.at(field);
      for (std::uint64_t t = 0; t < length; ++t)
        data.push_back(static_cast<std::int32_t>(values[e * length + t]));
    }
  }
  data::Hdf5Writer writer((dir / "data.h5").string());
  writer.write("data", {examples, 3, length}, data);
  writer.set_attribute("n_examples", static_cast<std::int64_t>(examples));
  writer.close();
  return "{data_processor: GptHDF5DataProcessor, data_dir: '" + dir.string() +
         "', max_sequence_length: " + std::to_string(length);
}

// Pre-masked BERT CSV files (BertCSVDataProcessor): the golden masks are drawn at random.
std::string write_bert(const fs::path& dir, const std::map<std::string, std::vector<double>>& rows,
                       std::uint64_t length, std::uint64_t predictions) {
  // The next-sentence labels only where the model has its head (not RoBERTa).
  std::vector<std::pair<std::string, std::string>> columns = {
      {"input_ids", "input_ids"},           {"attention_mask", "attention_mask"},
      {"token_type_ids", "token_type_ids"}, {"masked_lm_positions", "masked_lm_positions"},
      {"labels", "masked_lm_labels"},       {"masked_lm_weights", "masked_lm_weights"}};
  if (rows.contains("next_sentence_label"))
    columns.emplace_back("next_sentence_label", "next_sentence_label");
  std::uint64_t examples = rows.at("input_ids").size() / length;
  std::ofstream csv(dir / "part-0.csv");
  for (std::size_t c = 0; c < columns.size(); ++c)
    csv << (c ? "," : "") << columns[c].first;
  csv << "\n";
  for (std::uint64_t e = 0; e < examples; ++e) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::vector<double>& values = rows.at(columns[c].second);
      std::uint64_t width = values.size() / examples;
      csv << (c ? ",\"[" : "\"[");
      for (std::uint64_t i = 0; i < width; ++i)
        csv << (i ? ", " : "") << static_cast<std::int64_t>(values[e * width + i]);
      csv << "]\"";
    }
    csv << "\n";
  }
  std::ofstream(dir / "meta.dat") << "part-0.csv " << examples << "\n";
  return "{data_processor: BertCSVDataProcessor, data_dir: '" + dir.string() +
         "', max_sequence_length: " + std::to_string(length) +
         ", max_predictions_per_seq: " + std::to_string(predictions);
}

// The Model Zoo UNet's HDF5 layout (Hdf5DataProcessor): per example an image [C, spatial...] of
// the grey levels the normalized inputs came from, and its label (a mask [1, spatial...] for
// bce, class ids [spatial...] otherwise).
std::string write_segmentation(const fs::path& dir,
                               const std::map<std::string, std::vector<double>>& rows,
                               const test::GoldenCurve& curve) {
  // A sample's dimensions: the batch field's without its first.
  auto sample = [](const models::BatchField& field) {
    std::vector<std::uint64_t> dims;
    for (std::size_t axis = 1; axis < field.type.shape.size(); ++axis)
      dims.push_back(static_cast<std::uint64_t>(field.type.shape[axis]));
    return dims;
  };
  auto count = [](const std::vector<std::uint64_t>& dims) {
    std::size_t total = 1;
    for (std::uint64_t size : dims)
      total *= size;
    return total;
  };
  std::vector<std::uint64_t> image = sample(curve.step.batch.front());
  std::vector<std::uint64_t> label = sample(curve.step.batch.back());
  std::size_t pixels = count(image);
  std::size_t width = count(label);
  std::size_t examples = rows.at("labels").size() / width;
  data::Hdf5Writer writer((dir / "shapes.h5").string());
  for (std::size_t e = 0; e < examples; ++e) {
    std::vector<std::uint8_t> grey;
    for (std::size_t p = 0; p < pixels; ++p)
      grey.push_back(
          static_cast<std::uint8_t>(std::lround((rows.at("input")[e * pixels + p] + 1.0) * 127.5)));
    std::vector<float> values(
        rows.at("labels").begin() + static_cast<std::ptrdiff_t>(e * width),
        rows.at("labels").begin() + static_cast<std::ptrdiff_t>((e + 1) * width));
    std::string group = "example_" + std::to_string(e);
    writer.write(group + "/image", image, std::span<const std::uint8_t>(grey));
    writer.write(group + "/label", label, std::span<const float>(values));
  }
  writer.set_attribute("n_examples", static_cast<std::int64_t>(examples));
  writer.close();
  // image_shape: [H, W, C] in 2D, [D, H, W] in 3D (image is [C, spatial...]).
  std::string listed;
  for (std::size_t axis = 1; axis < image.size(); ++axis)
    listed += (axis > 1 ? ", " : "") + std::to_string(image[axis]);
  if (image.size() == 3) listed += ", " + std::to_string(image[0]);
  auto model = nlohmann::json::parse(curve.init)["model"];
  return "{data_processor: Hdf5DataProcessor, data_dir: '" + dir.string() + "', image_shape: [" +
         listed + "], num_classes: " + std::to_string(model["num_classes"].get<int>()) +
         ", normalize_data_method: zero_centered, augment_data: false";
}

// Whether the curve's batches can be written as files csrun reads back as the same batches: the
// fine-tuning heads' and the encoder-decoders' formats tokenize text and derive their masks (and
// the decoder's inputs), so their curves are checked on the runtime (test/unit/runtime) and their
// readers by test/unit/data instead.
bool writable(const test::GoldenCurve& curve) {
  bool fine_tuning = false;
  for (const models::BatchField& field : curve.step.batch)
    fine_tuning =
        fine_tuning || field.name == "token_type_ids" || field.name == "decoder_input_ids";
  bool pretraining =
      std::any_of(curve.step.batch.begin(), curve.step.batch.end(),
                  [](const models::BatchField& f) { return f.name == "masked_lm_positions"; });
  return !fine_tuning || pretraining;
}

// The data files of the curve's batches; returns the dataloader section that reads them.
std::string write_data(const test::GoldenCurve& curve, const fs::path& dir) {
  fs::create_directories(dir);
  auto rows = batch_rows(curve);
  std::string loader;
  const graph::Shape& first = curve.step.batch.front().type.shape;
  if (rows.contains("input") && first.size() > 2) {
    loader = write_segmentation(dir, rows, curve);
  } else if (rows.contains("input")) {
    loader = write_mnist(dir, rows);
  } else if (rows.contains("masked_lm_positions")) {
    auto predictions = static_cast<std::uint64_t>(curve.step.batch[3].type.shape[1]);
    loader = write_bert(dir, rows, static_cast<std::uint64_t>(first[1]), predictions);
  } else {
    loader = write_gpt(dir, rows, static_cast<std::uint64_t>(first[1]));
  }
  return loader + ", batch_size: " + std::to_string(curve.batch_size) + ", shuffle: false}";
}

std::string write_initial_checkpoint(const test::GoldenCurve& curve, const fs::path& path) {
  runner::Checkpoint checkpoint;
  for (auto& [name, tensor] : test::golden_initial_state(curve.step.graph)) {
    std::vector<std::uint64_t> dims(tensor.shape.begin(), tensor.shape.end());
    const std::vector<double>& values = tensor.values;
    if (tensor.dtype == graph::DType::i32) {
      checkpoint.tensors[name] = {dims,
                                  runner::CheckpointTensor::Integers(values.begin(), values.end())};
    } else {
      checkpoint.tensors[name] = {dims,
                                  runner::CheckpointTensor::Floats(values.begin(), values.end())};
    }
  }
  runner::save_checkpoint(path.string(), checkpoint);
  return path.string();
}

// Trains `curve` with csrun (extra flags appended) and returns its logged losses.
std::vector<double> train_losses(const test::GoldenCurve& curve,
                                 const std::vector<std::string>& flags) {
  test::TempDir dir;
  std::string loader = write_data(curve, dir.path() / "data");
  nlohmann::json init = nlohmann::json::parse(curve.init);
  init["loop"] = {{"max_steps", curve.losses.size()}};
  init["logging"] = {{"log_steps", 1}};
  init["model_dir"] = (dir.path() / "model").string();
  std::string params =
      dir.write("params.yaml", "trainer:\n  init: " + init.dump() +
                                   "\n  fit:\n    train_dataloader: " + loader + "\n");
  std::string checkpoint = write_initial_checkpoint(curve, dir.path() / "initial.mdl");
  std::vector<std::string> arguments = {"train", params, "--checkpoint_path", checkpoint};
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  auto run = test::run_csrun(arguments);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  bool split = std::find(flags.begin(), flags.end(), "--num_csx") != flags.end() ||
               std::find(flags.begin(), flags.end(), "--set") != flags.end();
  bool logged = (run.err + run.out).find("micro-steps of") != std::string::npos;
  CHECK(logged == split);
  REQUIRE(fs::is_directory(dir.path() / "model" / "events"));
  auto events = test::read_scalar_events(
      fs::directory_iterator(dir.path() / "model" / "events")->path().string());
  std::vector<double> losses = test::scalar_values(events, "loss");
  REQUIRE(losses.size() == curve.losses.size());
  return losses;
}

double worst_relative_difference(const std::vector<double>& losses,
                                 const std::vector<double>& expected) {
  double worst = 0.0;
  for (std::size_t s = 0; s < losses.size(); ++s)
    worst = std::max(worst, std::fabs(losses[s] - expected[s]) / std::fabs(expected[s]));
  return worst;
}

// The largest relative difference of csrun's losses (extra flags appended) from PyTorch's.
double worst_difference(const test::GoldenCurve& curve, const std::vector<std::string>& flags) {
  return worst_relative_difference(train_losses(curve, flags), curve.losses);
}

}  // namespace

TEST_CASE("csrun train --target_device CPU reproduces the 20-step PyTorch curves within 1e-4") {
  for (const test::GoldenCurve& curve : test::golden_curves()) {
    if (!writable(curve)) continue;
    INFO(curve.name);
    CHECK(worst_difference(curve, {"--target_device", "CPU"}) <= 1e-4);
  }
}

// docs/running.md states this tolerance: bfloat16 keeps 8 significant bits, and PyTorch's
// autocast and csrun's mixed precision round at different places. Measured: 2.0e-4 (fc_mnist)
// and 3.7e-4 (gpt2); the tolerance leaves a factor of 5.
TEST_CASE(
    "csrun train on CSX in bfloat16 stays within 0.2 % of PyTorch's bfloat16 autocast curves") {
  for (const test::GoldenCurve& curve :
       test::golden_curves(test::CurvePrecision::bfloat16_autocast)) {
    if (!writable(curve)) continue;
    INFO(curve.name);
    double worst = worst_difference(curve, {});
    CHECK(worst <= 2e-3);
    CHECK(worst > 0.0);
  }
}

// docs/training.md: the global batch is split across num_csx replicas and each replica's share
// into micro-batches (micro_batch_size, or grad_accum_steps on CPU); the gradients add up to the
// whole batch's before one update, so every split trains the curve the whole batch trains, up to
// the order of fp32 sums.
TEST_CASE("every split of the global batch into replicas and micro-batches trains the same curve") {
  for (const test::GoldenCurve& curve : test::golden_curves()) {
    // Batch normalization's statistics are the micro-batch's, as in PyTorch: a split changes them.
    bool batch_statistics = curve.init.find("batchnorm") != std::string::npos;
    if (!writable(curve) || curve.batch_size % 2 != 0 || batch_statistics) continue;
    INFO(curve.name);
    std::vector<double> whole = train_losses(curve, {"--target_device", "CPU"});
    const std::string micro_batch = "trainer.fit.train_dataloader.micro_batch_size=";
    std::string half = std::to_string(curve.batch_size / 2);
    std::vector<std::vector<std::string>> splits = {{"--num_csx", "2"},
                                                    {"--set", micro_batch + half}};
    if (curve.batch_size % 4 == 0)
      splits.push_back(
          {"--num_csx", "2", "--set", micro_batch + std::to_string(curve.batch_size / 4)});
    // Gradient accumulation reads two batches of half the batch per step, the same samples, and
    // averages each batch's loss on its own: the whole batch's where the loss averages over
    // samples (a loss over tokens: the next test).
    std::string model = nlohmann::json::parse(curve.init)["model"]["name"];
    if (model != "gpt2" && model != "gptj" && model != "llama") {
      splits.push_back({"--set", "trainer.fit.train_dataloader.batch_size=" + half, "--set",
                        "trainer.init.loop.grad_accum_steps=2"});
    }
    for (const std::vector<std::string>& split : splits) {
      std::vector<std::string> flags = {"--target_device", "CPU"};
      flags.insert(flags.end(), split.begin(), split.end());
      INFO(split.front() << " " << split.at(1) << (split.size() > 2 ? " " + split.back() : ""));
      CHECK(worst_relative_difference(train_losses(curve, flags), whole) <= 1e-5);
    }
  }
}

// The Model Zoo's gradient accumulation on CPU and GPU divides each batch's own loss (a GPT's
// averaged over that batch's tokens) by grad_accum_steps. With a learning rate of 0 the weights
// stay: an accumulated step over two batches logs the mean of their two losses, which is not the
// loss of the two as one batch when they hold different numbers of tokens.
TEST_CASE("gradient accumulation averages each batch's loss over its own tokens") {
  test::TempDir dir;
  const std::uint64_t length = 8;
  std::map<std::string, std::vector<double>> rows;
  for (std::uint64_t e = 0; e < 2; ++e) {
    for (std::uint64_t t = 0; t < length; ++t) {
      rows["input_ids"].push_back(static_cast<double>((e * 7 + t * 3) % 32));
      rows["labels"].push_back(static_cast<double>((e * 5 + t * 11) % 32));
      rows["attention_mask"].push_back(e == 1 || t < 3 ? 1.0 : 0.0);
    }
  }
  fs::create_directories(dir.path() / "data");
  std::string loader = write_gpt(dir.path() / "data", rows, length) + ", shuffle: false";
  int runs = 0;
  auto params_for = [&](int batch, int accumulated, int steps, const fs::path& model_dir) {
    return dir.write(
        "params.yaml",
        "trainer:\n  init:\n    device: CPU\n    seed: 1\n    model_dir: '" + model_dir.string() +
            "'\n    model: {name: gpt2, vocab_size: 32, hidden_size: 16, num_heads: 2, "
            "num_hidden_layers: 1, filter_size: 32, max_position_embeddings: 8, dropout_rate: 0.0, "
            "attention_dropout_rate: 0.0, embedding_dropout_rate: 0.0, embedding_initializer: "
            "{name: normal, std: 1.0}}\n"
            "    optimizer: {SGD: {lr: 0.0}}\n    loop: {max_steps: " +
            std::to_string(steps) + ", grad_accum_steps: " + std::to_string(accumulated) +
            "}\n    logging: {log_steps: 1}\n  fit:\n    train_dataloader: " + loader +
            ", batch_size: " + std::to_string(batch) + "}\n");
  };
  auto losses = [&](int batch, int accumulated, int steps) {
    fs::path model_dir = dir.path() / ("model" + std::to_string(runs++));
    auto run = test::run_csrun({"train", params_for(batch, accumulated, steps, model_dir)});
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    auto events =
        test::read_scalar_events(fs::directory_iterator(model_dir / "events")->path().string());
    return test::scalar_values(events, "loss");
  };
  std::vector<double> apart = losses(1, 1, 2);
  std::vector<double> accumulated = losses(1, 2, 1);
  std::vector<double> together = losses(2, 1, 1);
  REQUIRE(apart.size() == 2);
  REQUIRE(accumulated.size() == 1);
  REQUIRE(together.size() == 1);
  // The first batch keeps 3 tokens, the second 8; their mean losses differ enough to tell the
  // two normalizations apart.
  REQUIRE(std::fabs(apart[0] - apart[1]) > 0.05);
  CHECK(accumulated[0] == Approx((apart[0] + apart[1]) / 2).epsilon(1e-5));
  CHECK(together[0] == Approx((3 * apart[0] + 8 * apart[1]) / 11).epsilon(1e-5));
  // An epoch of two batches cannot fill a step of three.
  auto short_epoch = test::run_csrun({"validate", params_for(1, 3, 1, dir.path() / "short")});
  CHECK(short_epoch.exit_code == 1);
  CHECK(short_epoch.err.find("grad_accum_steps 3 needs that many batches per optimizer step, "
                             "and an epoch holds 2 of batch_size 1") != std::string::npos);
}

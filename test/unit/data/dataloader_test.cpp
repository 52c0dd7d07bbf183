#include <catch2/catch.hpp>

#include "data/dataloader.hpp"
#include "data/processor_registry.hpp"
#include "support/params_fixture.hpp"

using namespace csrun;

namespace {

struct Checked {
  std::optional<data::DataloaderSpec> spec;
  config::Diagnostics diagnostics;
  bool error(const std::string& text) const {
    for (const config::Diagnostic& d : diagnostics.all()) {
      if (d.severity == config::Severity::error && d.to_string().find(text) != std::string::npos)
        return true;
    }
    return false;
  }
};

Checked check(const std::string& loader, std::int64_t num_csx = 1,
              std::vector<std::string> processors = {"GptHDF5DataProcessor",
                                                     "GptHDF5MapDataProcessor"},
              bool fake = true) {
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CSX\n    model: {name: gpt2}\n"
      "    loop: {max_steps: 1}\n  fit:\n    train_dataloader: " +
      loader + "\n");
  Checked checked;
  data::DataloaderContext context{data::LoaderRole::train, num_csx, fake, std::move(processors)};
  checked.spec =
      data::check_dataloader(loaded.trainer().fit->train_dataloader, context, checked.diagnostics);
  return checked;
}

}  // namespace

TEST_CASE("a dataloader in normal form") {
  Checked checked = check(
      "{data_processor: GptHDF5DataProcessor, data_dir: [a, b], batch_size: 12, "
      "micro_batch_size: 3, shuffle: false, shuffle_seed: 7, drop_last_batch: false}",
      2);
  REQUIRE(checked.spec);
  CHECK_FALSE(checked.diagnostics.has_errors());
  CHECK(checked.spec->processor == "GptHDF5DataProcessor");
  CHECK(checked.spec->batch_size == 12);
  CHECK(checked.spec->micro_batch_size == 3);
  CHECK_FALSE(checked.spec->shuffle);
  CHECK(checked.spec->shuffle_seed == 7);
  CHECK_FALSE(checked.spec->drop_last);
  CHECK(checked.spec->data_dirs == std::vector<std::string>{"a", "b"});
  CHECK(checked.spec->fake);
}

TEST_CASE("the global batch splits evenly across systems, micro-batches divide a system's share") {
  CHECK(check("{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 10}", 4)
            .error("batch_size: batch_size is the global batch, split evenly across num_csx = 4 "
                   "systems: it "
                   "requires the global batch size 10 to be divisible by num_csx"));
  CHECK(check("{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 12, "
              "micro_batch_size: 5}",
              2)
            .error("micro_batch_size 5 must divide the batch each system receives, batch_size / "
                   "num_csx = 12 / 2 = 6: give its divisors (1, 2, 3, 6), auto or explore"));
  CHECK(check("{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 1040, "
              "micro_batch_size: 88}")
            .error("= 1040 / 1 = 1040: give a divisor of 1040, auto or explore"));
  Checked automatic = check(
      "{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 12, micro_batch_size: "
      "auto}");
  CHECK(automatic.spec->micro_batch_mode == "auto");
}

TEST_CASE("a split's message lists the share's divisors, or names the share where they are many") {
  CHECK(csrun::data::divisors_text(1) == "its divisors (1)");
  CHECK(csrun::data::divisors_text(36) == "its divisors (1, 2, 3, 4, 6, 9, 12, 18, 36)");
  CHECK(csrun::data::divisors_text(1040) == "a divisor of 1040");
  // The largest prime below 2^40 is searched (a million trial divisions); beyond 2^40, none is.
  CHECK(csrun::data::divisors_text(1099511627689) == "its divisors (1, 1099511627689)");
  CHECK(csrun::data::divisors_text(std::int64_t{1} << 50) == "a divisor of 1125899906842624");
}

TEST_CASE("the data processor must be one the model reads") {
  CHECK(check("{batch_size: 4, data_dir: d}")
            .error("Data Processor config must have a `data_processor` key with one of the "
                   "following values:\n"
                   "- GptHDF5DataProcessor\n- GptHDF5MapDataProcessor"));
  CHECK(
      check("{data_processor: GptHDF5MapDataProcesor, batch_size: 4, data_dir: d}")
          .error(
              "Expected data_processor to be one of the following values:\n- GptHDF5DataProcessor\n"
              "- GptHDF5MapDataProcessor\nGot: GptHDF5MapDataProcesor; did you mean "
              "'GptHDF5MapDataProcessor'?"));
  Checked single = check("{batch_size: 4}", 1, {"MNISTDataProcessor"});
  REQUIRE(single.spec);
  CHECK(single.spec->processor == "MNISTDataProcessor");
}

TEST_CASE("with fake data, a processor csrun does not know is a warning, not an error") {
  std::string loader =
      "{data_processor: MyCorpusStreamProcessor, batch_size: 4, data_dir: d, "
      "max_sequence_length: 128, add_special_tokens: true}";
  Checked fake = check(loader);
  REQUIRE(fake.spec);
  CHECK_FALSE(fake.diagnostics.has_errors());
  CHECK(fake.spec->processor == "MyCorpusStreamProcessor");
  CHECK(fake.spec->batch_size == 4);
  CHECK(fake.spec->max_sequence_length == 128);
  bool warned = false;
  for (const config::Diagnostic& d : fake.diagnostics.all())
    warned = warned ||
             d.message.find(
                 "csrun does not know the data processor "
                 "MyCorpusStreamProcessor: --fake_data supplies the batches") != std::string::npos;
  CHECK(warned);
  CHECK(check(loader, 1, {"GptHDF5DataProcessor", "GptHDF5MapDataProcessor"}, false)
            .error("Got: MyCorpusStreamProcessor"));
  CHECK(check("{data_processor: MyCorpusStreamProcessor, data_dir: d}").error("batch_size"));
}

TEST_CASE("processor keys are checked") {
  CHECK(
      check("{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 4, shuffel: true}")
          .error(
              "train_dataloader.shuffel: Extra inputs are not permitted; did you mean 'shuffle'?"));
  CHECK(check("{data_processor: GptHDF5MapDataProcessor, data_dir: d, mixture: [{data_dir: e}], "
              "batch_size: 4}")
            .error("Only one of `data_dir` or `mixture` must be specified."));
  CHECK(check("{data_processor: GptHDF5DataProcessor, batch_size: 4}")
            .error("Field required: 'data_dir'"));
  CHECK(check("{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 0}")
            .error("batch_size: expected an integer ≥ 1; found the integer 0"));
  CHECK(check("{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 4, drop_last: true, "
              "drop_last_batch: false}")
            .error("drop_last_batch and drop_last are the same setting and disagree"));
}

TEST_CASE("processors csrun cannot read need --fake_data") {
  Checked checked = check("{data_processor: T5HDF5DataProcessor, data_dir: d, batch_size: 4}", 1,
                          {"T5HDF5DataProcessor"}, false);
  CHECK(checked.error(
      "csrun has no reader for T5HDF5DataProcessor (T5 HDF5 files); check the rest of the config "
      "with --fake_data"));
}

TEST_CASE("environment variables in paths") {
  setenv("CSRUN_TEST_ROOT", "/data/root", 1);
  Checked checked = check(
      "{data_processor: GptHDF5DataProcessor, data_dir: '${CSRUN_TEST_ROOT}/train', batch_size: "
      "4}");
  CHECK(checked.spec->data_dirs == std::vector<std::string>{"/data/root/train"});
  unsetenv("CSRUN_TEST_ROOT_UNSET");
  CHECK(check("{data_processor: GptHDF5DataProcessor, data_dir: $CSRUN_TEST_ROOT_UNSET/x, "
              "batch_size: 4}")
            .error("the environment variable CSRUN_TEST_ROOT_UNSET used in "
                   "'$CSRUN_TEST_ROOT_UNSET/x' is not set"));
}

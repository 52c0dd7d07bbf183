#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "models/registry.hpp"
#include "modes/modes.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

// A network registered by the test: fc_mnist whose model code counts its builds (a side effect)
// and, from a chosen build on, builds a different graph.
int builds = 0;
std::optional<int> changes_from_build;

void register_probe() {
  static const bool registered = [] {
    models::ModelDefinition probe = *models::find_model("fc_mnist");
    probe.name = "retrace_probe";
    probe.build = [base = probe.build](models::ModelBuild& build) {
      ++builds;
      models::ModelOutputs outputs = base(build);
      if (changes_from_build && builds >= *changes_from_build) outputs.loss = outputs.loss * 2.0;
      return outputs;
    };
    models::register_model(std::move(probe));
    return true;
  }();
  (void)registered;
}

std::string params(bool retrace, const std::filesystem::path& model_dir) {
  std::string text =
      "trainer:\n  init:\n    device: CPU\n    seed: 1\n    model_dir: " + model_dir.string() +
      "\n" + R"(    model: {name: retrace_probe, hidden_sizes: [8]}
    optimizer: {SGD: {lr: 0.01}}
    loop: {max_steps: 5}
    checkpoint: {steps: 0}
    logging: {log_steps: 1}
)";
  if (retrace)
    text += "    callbacks:\n      - GlobalFlags: {csx.debug.retrace_every_iteration: true}\n";
  return text + R"(  fit:
    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 4}
)";
}

struct Trained {
  int status = 0;
  std::string errors;
};

Trained train(bool retrace) {
  test::TempDir dir;
  std::filesystem::path path = dir.path() / "params.yaml";
  std::ofstream(path) << params(retrace, dir.path() / "model");
  modes::RunOptions options;
  options.params_path = path.string();
  options.fake_data = true;
  std::ostringstream errors;
  std::streambuf* standard = std::cerr.rdbuf(errors.rdbuf());
  int status = modes::train(options);
  std::cerr.rdbuf(standard);
  return {status, errors.str()};
}

}  // namespace

TEST_CASE("model code runs once without retrace_every_iteration and before every step with it") {
  register_probe();
  changes_from_build.reset();
  builds = 0;
  Trained once = train(false);
  INFO(once.errors);
  REQUIRE(once.status == 0);
  CHECK(builds == 1);  // the trace that was compiled

  builds = 0;
  Trained every = train(true);
  INFO(every.errors);
  REQUIRE(every.status == 0);
  CHECK(builds == 1 + 5);  // and again before each of the 5 steps
}

TEST_CASE("with retrace_every_iteration, a graph that changes at step 3 stops the run there") {
  register_probe();
  builds = 0;
  changes_from_build = 4;  // the compiled trace, then steps 1 and 2 agree
  Trained run = train(true);
  changes_from_build.reset();
  CHECK(run.status == 1);
  CHECK_THAT(run.errors, Catch::Contains("retrace_every_iteration: the model traced for step 3 "
                                         "builds a different graph from the one compiled"));
  CHECK_THAT(run.errors, Catch::Contains("node"));
  CHECK(builds == 4);

  builds = 0;
  changes_from_build = 4;
  Trained unchecked = train(false);
  changes_from_build.reset();
  CHECK(unchecked.status == 0);  // without the flag the model is traced once and never compared
}

// The params loader and the model checks on arbitrary bytes: every problem must come back as a
// diagnostic; nothing may throw, crash or hang.

#include "config/params_loader.hpp"
#include "models/registry.hpp"
#include "scratch_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string path = csrun::fuzz::scratch().write("params.yaml", csrun::fuzz::as_text(data, size));
  csrun::config::Diagnostics diagnostics;
  csrun::config::RunSpec run = csrun::config::load_params(path, {}, diagnostics);
  for (const csrun::config::TrainerSpec& trainer : run.trainers)
    csrun::models::check_model(trainer, diagnostics);
  return 0;
}

#include "params_fixture.hpp"

namespace csrun::test {

bool LoadedParams::has(config::Severity severity, const std::string& text) const {
  for (const config::Diagnostic& d : diagnostics.all()) {
    if (d.severity == severity && d.to_string().find(text) != std::string::npos) return true;
  }
  return false;
}

std::string LoadedParams::dump() const {
  std::string text;
  for (const config::Diagnostic& d : diagnostics.all())
    text += d.to_string() + "\n";
  return text;
}

LoadedParams load_params_file(const std::string& path, const config::LoadOptions& options) {
  LoadedParams loaded;
  loaded.run = config::load_params(path, options, loaded.diagnostics);
  return loaded;
}

LoadedParams load_params_text(const std::string& yaml, const config::LoadOptions& options) {
  TempDir dir;
  return load_params_file(dir.write("p.yaml", yaml), options);
}

}  // namespace csrun::test

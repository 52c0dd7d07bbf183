#include <filesystem>
#include <fstream>
#include <sstream>

#include "data_paths.hpp"
#include "processor_registry.hpp"

namespace csrun::data {

namespace fs = std::filesystem;

// BertCSVDynamicMaskDataProcessor reads the CSV files that data_dir/meta.dat lists, one
// "<file> <number of examples>" per line, and a vocabulary file.
DatasetFacts check_bert_csv_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics) {
  const config::Node& data_dir = *loader.params.find("data_dir");
  std::int64_t examples = 0;
  for (const std::string& directory : loader.data_dirs) {
    if (!require_directory(directory, data_dir, diagnostics)) continue;
    fs::path meta = fs::path(directory) / "meta.dat";
    std::ifstream lines(meta);
    if (!lines) {
      diagnostics.error(data_dir.mark(), data_dir.path(),
                        "Meta file is missing in the input directory: " + directory + ".");
      continue;
    }
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
      ++number;
      std::istringstream fields(line);
      std::string file;
      long long count = -1;
      if (!(fields >> file)) continue;
      if (!(fields >> count) || count < 0) {
        diagnostics.error(data_dir.mark(), data_dir.path(),
                          meta.string() + " line " + std::to_string(number) +
                              ": expected '<csv file> <number of examples>'");
        break;
      }
      examples += count;
      fs::path csv = fs::path(directory) / file;
      if (!fs::is_regular_file(csv)) {
        diagnostics.error(data_dir.mark(), data_dir.path(),
                          meta.string() + " line " + std::to_string(number) + " lists '" + file +
                              "', which is not in " + directory);
        break;
      }
    }
  }
  if (const config::Node* vocab = loader.params.find("vocab_file")) {
    if (auto path = expand_path(*vocab, diagnostics)) require_file(*path, *vocab, diagnostics);
  }
  return {examples, std::nullopt};
}

}  // namespace csrun::data

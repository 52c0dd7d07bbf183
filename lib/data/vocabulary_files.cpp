#include "vocabulary_files.hpp"

#include <fstream>
#include <optional>
#include <string>

#include "data_paths.hpp"

namespace csrun::data {

namespace {

using config::Node;

struct VocabularyKey {
  const char* processor;
  const char* file_key;    // the input's vocabulary file
  const char* model_key;   // the model's size
  std::int64_t shipped;    // the lines of the vocabulary the Model Zoo's own data uses
  const char* shipped_as;  // what that vocabulary is
};

constexpr VocabularyKey kVocabularies[] = {
    {"T5DynamicDataProcessor", "src_vocab_file", "src_vocab_size", 32001,
     "the C4 sentencepiece vocabulary of Release 1.9's T5 configs"},
    {"TransformerDynamicDataProcessor", "src_vocab_file", "src_vocab_size", 36550,
     "the WMT16 en-de BPE vocabulary of Release 1.9's Transformer configs"},
    {"TransformerDynamicDataProcessor", "tgt_vocab_file", "tgt_vocab_size", 36550,
     "the WMT16 en-de BPE vocabulary of Release 1.9's Transformer configs"},
};

// The number of lines of a vocabulary file (one token per line), or why it cannot be read.
std::optional<std::int64_t> count_lines(const std::string& path, std::string& problem) {
  problem = regular_file_problem(path);
  if (!problem.empty()) {
    problem = path + " " + problem;
    return std::nullopt;
  }
  std::ifstream file(path);
  if (!file) {
    problem = path + " cannot be opened";
    return std::nullopt;
  }
  std::int64_t lines = 0;
  std::string line;
  while (std::getline(file, line)) {
    if (!line.empty()) ++lines;
  }
  if (lines == 0) problem = path + " holds no tokens";
  return lines > 0 ? std::optional(lines) : std::nullopt;
}

const Node* train_loader(const config::TrainerSpec& trainer) {
  if (trainer.fit && trainer.fit->train_dataloader.is_map()) return &trainer.fit->train_dataloader;
  if (trainer.validate && trainer.validate->val_dataloader.is_map())
    return &trainer.validate->val_dataloader;
  return nullptr;
}

void set_model_key(config::TrainerSpec& trainer, const char* key, Node value) {
  trainer.model.params.set(key, value, value.mark());
  Node* init = trainer.tree.find("init");
  Node* model = init ? init->find("model") : nullptr;
  if (model && model->is_map()) model->set(key, value, value.mark());
}

}  // namespace

void read_vocabulary_sizes(config::TrainerSpec& trainer, config::Diagnostics& diagnostics) {
  const Node* loader = train_loader(trainer);
  if (!trainer.tensorflow_layout || !loader || !trainer.model.params.is_map()) return;
  const Node* processor = loader->find("data_processor");
  for (const VocabularyKey& vocabulary : kVocabularies) {
    if (!processor || !processor->is_string() || processor->as_string() != vocabulary.processor)
      continue;
    if (trainer.model.params.contains(vocabulary.model_key)) continue;
    std::string path = config::join_path(trainer.model.path, vocabulary.model_key);
    const Node* file = loader->find(vocabulary.file_key);
    std::string problem = std::string("train_input has no ") + vocabulary.file_key;
    std::optional<std::int64_t> lines;
    if (file && file->is_string()) {
      config::Diagnostics expansion;
      if (auto expanded = expand_path(*file, expansion)) lines = count_lines(*expanded, problem);
    }
    config::SourceMark mark = file ? file->mark() : trainer.model.mark;
    if (lines) {
      diagnostics.note(mark, path,
                       std::string("the TensorFlow layout's vocabulary size is the number of "
                                   "tokens in ") +
                           vocabulary.file_key + ": csrun sets " + vocabulary.model_key + ": " +
                           std::to_string(*lines));
    } else {
      diagnostics.warning(mark, path,
                          std::string("the TensorFlow layout reads the vocabulary size from ") +
                              vocabulary.file_key + ", but " + problem + "; csrun sets " +
                              vocabulary.model_key + ": " + std::to_string(vocabulary.shipped) +
                              " (" + vocabulary.shipped_as + "); set model." +
                              vocabulary.model_key + " for another vocabulary");
    }
    set_model_key(trainer, vocabulary.model_key,
                  Node::make_int(lines.value_or(vocabulary.shipped), mark, path));
  }
}

}  // namespace csrun::data

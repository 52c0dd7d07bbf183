// The datasets of the BERT fine-tuning heads, as the Model Zoo's processors read them:
// SST2DataProcessor and MNLIDataProcessor (GLUE TSV files of raw text, WordPiece-tokenized),
// BertTokenClassifierDataProcessor (NER CSV files of tokens and label names, a JSON label
// vocabulary) and BertSumCSVDataProcessor (CSV files of token ids, labels, segments and [CLS]
// positions).

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>

#include "csv_tables.hpp"
#include "data_paths.hpp"
#include "dataset.hpp"
#include "processor_registry.hpp"
#include "vocabulary.hpp"
#include "wordpiece.hpp"

namespace csrun::data {

namespace fs = std::filesystem;

namespace {

// Samples prepared in memory: per field of the model's layout, its values of every sample, each
// sample's padded (or cut) to the field's width.
class SampleTable : public Dataset {
 public:
  explicit SampleTable(std::vector<SampleField> fields)
      : fields_(std::move(fields)), values_(fields_.size()) {}

  std::int64_t size() const override { return samples_; }

  void read(std::int64_t index, std::int64_t, std::int64_t row, BatchData& batch) const override {
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      std::int64_t width = fields_[f].elements;
      auto first = values_[f].begin() + index * width;
      if (fields_[f].integer) {
        std::copy(first, first + width, batch.integers[f].begin() + row * width);
      } else {
        std::transform(first, first + width, batch.floats[f].begin() + row * width,
                       [](std::int32_t v) { return static_cast<float>(v); });
      }
    }
  }

  // Sets field `name` of the sample being built; throws std::invalid_argument for a value
  // outside the field's range.
  void put(std::string_view name, std::span<const std::int64_t> values) {
    std::size_t f = index_of(name);
    const SampleField& field = fields_[f];
    std::vector<std::int32_t>& stored = values_[f];
    auto width = static_cast<std::size_t>(field.elements);
    for (std::size_t i = 0; i < width; ++i) {
      std::int64_t value = i < values.size() ? values[i] : 0;
      if (field.integer && field.limit > 0 && (value < 0 || value >= field.limit)) {
        throw std::invalid_argument(field.name + " holds " + std::to_string(value) +
                                    ", outside [0, " + std::to_string(field.limit) + ")");
      }
      stored.push_back(static_cast<std::int32_t>(value));
    }
  }

  void end_sample() { ++samples_; }

  std::int64_t width(std::string_view name) const { return fields_[index_of(name)].elements; }
  bool has(std::string_view name) const {
    return std::any_of(fields_.begin(), fields_.end(),
                       [&](const SampleField& f) { return f.name == name; });
  }

 private:
  std::size_t index_of(std::string_view name) const {
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      if (fields_[f].name == name) return f;
    }
    throw std::logic_error("the model's batch has no field " + std::string(name));
  }

  std::vector<SampleField> fields_;
  std::vector<std::vector<std::int32_t>> values_;
  std::int64_t samples_ = 0;
};

std::vector<std::int64_t> ones_where(std::span<const std::int64_t> values, std::size_t width) {
  std::vector<std::int64_t> mask(width, 0);
  for (std::size_t i = 0; i < std::min(width, values.size()); ++i)
    mask[i] = values[i] != 0 ? 1 : 0;
  return mask;
}

Vocabulary open_vocabulary(const DataloaderSpec& loader, bool lower) {
  const config::Node* key = loader.params.find("vocab_file");
  if (!key) throw std::runtime_error(loader.processor + " needs vocab_file");
  config::Diagnostics diagnostics;
  auto path = expand_path(*key, diagnostics);
  if (!path) throw std::runtime_error("vocab_file: " + diagnostics.all().front().message);
  return Vocabulary(*path, lower, "[UNK]");
}

// Runs `read` for the record at `line` of `source`, naming both in the error of a bad value.
template <class ReadRecord>
void read_record(const std::string& source, std::int64_t line, ReadRecord&& read) {
  try {
    read();
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(source + " line " + std::to_string(line) + ": " + error.what());
  }
}

std::unique_ptr<Dataset> require_examples(std::unique_ptr<SampleTable> table,
                                          const DataloaderSpec& loader) {
  if (table->size() == 0) throw std::runtime_error("no examples in " + loader.data_dirs.front());
  return table;
}

// ---- GLUE (SST-2, MNLI): TSV files of raw text --------------------------------------------------

struct TsvFile {
  std::string source;
  std::vector<std::string> header;
  std::vector<std::pair<std::int64_t, std::vector<std::string>>> rows;  // line, fields

  std::size_t column(const std::string& name) const {
    auto found = std::find(header.begin(), header.end(), name);
    if (found == header.end())
      throw std::runtime_error(source + " line 1: the header has no column '" + name + "'");
    return static_cast<std::size_t>(found - header.begin());
  }
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (std::size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', start)) {
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  fields.push_back(line.substr(start));
  return fields;
}

TsvFile read_tsv(const fs::path& path) {
  TsvFile file{path.string(), {}, {}};
  std::istringstream lines(read_text(path));
  std::string line;
  for (std::int64_t number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (file.header.empty()) {
      file.header = split_tabs(line);
    } else {
      file.rows.emplace_back(number, split_tabs(line));
    }
  }
  if (file.header.empty()) throw std::runtime_error(file.source + " is empty");
  return file;
}

bool is_mnli(const DataloaderSpec& loader) {
  return loader.processor == "MNLIDataProcessor";
}

bool training_split(const DataloaderSpec& loader) {
  const config::Node* given = loader.params.find("is_training");
  if (given && given->is_bool()) return given->as_bool();
  return loader.role == LoaderRole::train;
}

// The TSV files a GLUE loader reads: train.tsv for training, dev.tsv (MNLI: dev_matched.tsv then
// dev_mismatched.tsv) for evaluation.
std::vector<fs::path> glue_files(const DataloaderSpec& loader) {
  std::vector<std::string> names = {"train.tsv"};
  if (!training_split(loader)) {
    names = is_mnli(loader) ? std::vector<std::string>{"dev_matched.tsv", "dev_mismatched.tsv"}
                            : std::vector<std::string>{"dev.tsv"};
  }
  std::vector<fs::path> files;
  for (const std::string& directory : loader.data_dirs) {
    for (const std::string& name : names)
      files.push_back(fs::path(directory) / name);
  }
  return files;
}

std::int64_t glue_label(const std::string& text, bool mnli) {
  if (mnli) {
    if (text == "entailment") return 0;
    if (text == "neutral") return 1;
    if (text == "contradiction") return 2;
    throw std::invalid_argument("gold_label '" + text +
                                "' (expected entailment, neutral or contradiction)");
  }
  if (text == "0" || text == "1") return text == "1" ? 1 : 0;
  throw std::invalid_argument("label '" + text + "' (expected 0 or 1)");
}

// [CLS] a [SEP] (b [SEP]) in `length` positions: the longer text loses its last token until they
// fit (b on a tie), as the Model Zoo's encode_sequence does; its segment ids set positions
// len(a)..len(a)+len(b)-1 to 1, two before b starts (the Model Zoo's own off-by-two, kept so that
// models trained by either tool read the same inputs).
void encode_glue(std::vector<std::string> a, std::optional<std::vector<std::string>> b,
                 std::int64_t length, const Vocabulary& vocab, bool lower, SampleTable& table) {
  auto room = static_cast<std::size_t>(std::max<std::int64_t>(length - (b ? 3 : 2), 0));
  if (!b) {
    if (a.size() > room) a.resize(room);
  } else {
    while (a.size() + b->size() > room) {
      if (a.size() > b->size()) {
        a.pop_back();
      } else {
        b->pop_back();
      }
    }
  }
  auto id = [&](const std::string& token) { return vocab.id(lower ? lowered(token) : token); };
  std::vector<std::int64_t> ids = {vocab.require(lower ? "[cls]" : "[CLS]", "[CLS]")};
  std::int64_t separator = vocab.require(lower ? "[sep]" : "[SEP]", "[SEP]");
  for (const std::string& token : a)
    ids.push_back(id(token));
  ids.push_back(separator);
  std::vector<std::int64_t> segments(static_cast<std::size_t>(length), 0);
  if (b) {
    for (const std::string& token : *b)
      ids.push_back(id(token));
    ids.push_back(separator);
    for (std::size_t i = a.size(); i < a.size() + b->size(); ++i)
      segments[i] = 1;
  }
  table.put("input_ids", ids);
  table.put("attention_mask", std::vector<std::int64_t>(ids.size(), 1));
  table.put("token_type_ids", segments);
}

// MNLI's evaluation marks each sample with the set it comes from.
void put_partition(const fs::path& file, SampleTable& table) {
  if (!table.has("is_matched")) return;
  std::int64_t matched = file.filename() == "dev_matched.tsv" ? 1 : 0;
  table.put("is_matched", std::vector<std::int64_t>{matched});
  table.put("is_mismatched", std::vector<std::int64_t>{1 - matched});
}

std::unique_ptr<Dataset> open_glue(const DataloaderSpec& loader,
                                   const std::vector<SampleField>& fields) {
  bool lower = loader_flag(loader, "do_lower");
  Vocabulary vocab = open_vocabulary(loader, lower);
  WordPieceTokenizer tokenizer(vocab, lower, lower ? "[unk]" : "[UNK]");
  auto table = std::make_unique<SampleTable>(fields);
  bool mnli = is_mnli(loader);
  for (const fs::path& path : glue_files(loader)) {
    TsvFile file = read_tsv(path);
    std::size_t first = file.column(mnli ? "sentence1" : "sentence");
    std::optional<std::size_t> second;
    if (mnli) second = file.column("sentence2");
    std::size_t label = file.column(mnli ? "gold_label" : "label");
    for (const auto& [line, fields] : file.rows) {
      const std::vector<std::string>& row = fields;
      read_record(file.source, line, [&] {
        std::size_t needed = std::max({first, label, second.value_or(0)});
        if (row.size() <= needed)
          throw std::invalid_argument("the row has " + std::to_string(row.size()) +
                                      " fields, fewer than the header's columns");
        std::optional<std::vector<std::string>> pair;
        if (second) pair = tokenizer.tokens(row[*second]);
        encode_glue(tokenizer.tokens(row[first]), pair, table->width("input_ids"), vocab, lower,
                    *table);
        std::vector<std::int64_t> value = {glue_label(row[label], mnli)};
        table->put("labels", value);
        put_partition(path, *table);
        table->end_sample();
      });
    }
  }
  return require_examples(std::move(table), loader);
}

// ---- NER: CSV files of WordPiece tokens and label names ---------------------------------------

std::map<std::string, std::int64_t> read_label_vocabulary(const DataloaderSpec& loader) {
  const config::Node* key = loader.params.find("label_vocab_file");
  if (!key) throw std::runtime_error(loader.processor + " needs label_vocab_file");
  config::Diagnostics diagnostics;
  auto path = expand_path(*key, diagnostics);
  if (!path) throw std::runtime_error("label_vocab_file: " + diagnostics.all().front().message);
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(read_text(*path));
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error("label_vocab_file " + *path + ": " + error.what());
  }
  std::map<std::string, std::int64_t> labels;
  if (!document.is_object())
    throw std::runtime_error("label_vocab_file " + *path + ": expected a JSON object {label: id}");
  for (const auto& [label, id] : document.items()) {
    if (!id.is_number_integer())
      throw std::runtime_error("label_vocab_file " + *path + ": the id of '" + label +
                               "' is not an integer");
    labels[label] = id.get<std::int64_t>();
  }
  return labels;
}

std::vector<std::string> split_spaces(const std::string& text) {
  std::istringstream words(text);
  std::vector<std::string> out;
  for (std::string word; words >> word;)
    out.push_back(word);
  return out;
}

std::unique_ptr<Dataset> open_ner(const DataloaderSpec& loader,
                                  const std::vector<SampleField>& fields) {
  static const std::string kColumns = "NER CSV columns: tokens, labels";
  bool lower = loader_flag(loader, "do_lower");
  Vocabulary vocab = open_vocabulary(loader, lower);
  std::map<std::string, std::int64_t> label_ids = read_label_vocabulary(loader);
  // Padding counts in the loss with include_padding_in_loss, as the label [PAD].
  auto pad = label_ids.find("[PAD]");
  std::int64_t pad_label = pad == label_ids.end() ? 0 : pad->second;
  bool whole = loader_flag(loader, "include_padding_in_loss");
  auto table = std::make_unique<SampleTable>(fields);
  std::int64_t length = table->width("input_ids");
  for (const CsvTable& csv : read_tables(loader)) {
    std::size_t tokens = *csv.column("tokens", true, kColumns);
    std::size_t labels = *csv.column("labels", true, kColumns);
    for (const CsvRecord& record : csv.records) {
      read_record(csv.source, record.line, [&] {
        std::vector<std::string> words = split_spaces(record_field(record, tokens));
        std::vector<std::string> names = split_spaces(record_field(record, labels));
        if (words.size() != names.size())
          throw std::invalid_argument(std::to_string(words.size()) + " tokens but " +
                                      std::to_string(names.size()) + " labels");
        if (static_cast<std::int64_t>(words.size()) > length)
          throw std::invalid_argument(std::to_string(words.size()) +
                                      " tokens, more than max_sequence_length " +
                                      std::to_string(length));
        std::vector<std::int64_t> ids;
        std::vector<std::int64_t> classes;
        for (std::size_t t = 0; t < words.size(); ++t) {
          ids.push_back(vocab.id(lower ? lowered(words[t]) : words[t]));
          auto label = label_ids.find(names[t]);
          if (label == label_ids.end())
            throw std::invalid_argument("the label '" + names[t] + "' is not in label_vocab_file");
          classes.push_back(label->second);
        }
        std::vector<std::int64_t> mask(ids.size(), 1);
        classes.resize(static_cast<std::size_t>(length), pad_label);
        table->put("input_ids", ids);
        table->put("attention_mask", mask);
        table->put("token_type_ids", std::vector<std::int64_t>{});
        table->put("labels", classes);
        table->put("loss_mask",
                   whole ? std::vector<std::int64_t>(static_cast<std::size_t>(length), 1) : mask);
        table->end_sample();
      });
    }
  }
  return require_examples(std::move(table), loader);
}

// ---- BertSum: CSV files of ids, labels, segments and [CLS] positions --------------------------

std::unique_ptr<Dataset> open_bertsum(const DataloaderSpec& loader,
                                      const std::vector<SampleField>& fields) {
  auto table = std::make_unique<SampleTable>(fields);
  std::size_t length = static_cast<std::size_t>(table->width("input_ids"));
  std::size_t sentences = static_cast<std::size_t>(table->width("cls_indices"));
  for (const CsvTable& csv : read_tables(loader)) {
    if (csv.header.size() < 4) {
      throw std::runtime_error(csv.source +
                               " line 1: expected the columns input_token_ids, labels, "
                               "segment_ids, cls_ids");
    }
    for (const CsvRecord& record : csv.records) {
      read_record(csv.source, record.line, [&] {
        std::vector<std::int64_t> ids = parse_integer_list(record_field(record, 0));
        std::vector<std::int64_t> labels = parse_integer_list(record_field(record, 1));
        std::vector<std::int64_t> segments = parse_integer_list(record_field(record, 2));
        std::vector<std::int64_t> positions = parse_integer_list(record_field(record, 3));
        ids.resize(std::min(ids.size(), length));
        positions.resize(std::min(positions.size(), sentences));
        for (std::int64_t position : positions) {
          if (position < 0 || position >= static_cast<std::int64_t>(length))
            throw std::invalid_argument("the [CLS] position " + std::to_string(position) +
                                        " lies outside the " + std::to_string(length) +
                                        " tokens kept");
        }
        table->put("input_ids", ids);
        table->put("attention_mask", ones_where(ids, length));
        table->put("token_type_ids", segments);
        table->put("labels", labels);
        table->put("cls_indices", positions);
        // The Model Zoo weighs a sentence by cls_indices != pad (0): the first, at 0, not at all.
        table->put("cls_weights", ones_where(positions, sentences));
        table->end_sample();
      });
    }
  }
  return require_examples(std::move(table), loader);
}

void require_key_file(const DataloaderSpec& loader, const char* key,
                      config::Diagnostics& diagnostics) {
  const config::Node* value = loader.params.find(key);
  if (!value) {
    diagnostics.error(loader.mark, config::join_path(loader.path, key),
                      loader.processor + " reads its files with " + key + "; set it");
    return;
  }
  if (auto path = expand_path(*value, diagnostics)) require_file(*path, *value, diagnostics);
}

}  // namespace

bool has_matched_partitions(const DataloaderSpec& loader) {
  return is_mnli(loader) && !training_split(loader);
}

std::unique_ptr<Dataset> open_bert_finetuning(const DataloaderSpec& loader,
                                              const std::vector<SampleField>& fields) {
  if (loader.processor == "BertTokenClassifierDataProcessor") return open_ner(loader, fields);
  if (loader.processor == "BertSumCSVDataProcessor") return open_bertsum(loader, fields);
  return open_glue(loader, fields);
}

DatasetFacts check_glue_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics) {
  const config::Node& data_dir = *loader.params.find("data_dir");
  for (const fs::path& path : glue_files(loader))
    require_file(path.string(), data_dir, diagnostics);
  require_key_file(loader, "vocab_file", diagnostics);
  return {};
}

DatasetFacts check_ner_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics) {
  std::int64_t examples = check_meta_files(loader, diagnostics);
  require_key_file(loader, "vocab_file", diagnostics);
  require_key_file(loader, "label_vocab_file", diagnostics);
  return {examples, std::nullopt, std::nullopt, std::nullopt};
}

DatasetFacts check_bertsum_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics) {
  return {check_meta_files(loader, diagnostics), std::nullopt, std::nullopt, std::nullopt};
}

}  // namespace csrun::data

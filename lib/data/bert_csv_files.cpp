#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "csv_records.hpp"
#include "data_paths.hpp"
#include "dataset.hpp"
#include "graph/counter_rng.hpp"
#include "masked_lm.hpp"
#include "processor_registry.hpp"

namespace csrun::data {

namespace fs = std::filesystem;

namespace {

// One line of a data directory's meta.dat: "<csv file> <number of examples>".
struct MetaEntry {
  fs::path file;
  std::int64_t examples = 0;
};

// The entries of `directory`/meta.dat; `problem` says what is wrong when it cannot be read.
std::vector<MetaEntry> read_meta(const std::string& directory, std::string& problem) {
  fs::path meta = fs::path(directory) / "meta.dat";
  if (std::string not_a_file = regular_file_problem(meta.string());
      !not_a_file.empty() && not_a_file != "does not exist") {
    problem = meta.string() + " " + not_a_file;
    return {};
  }
  std::ifstream lines(meta);
  if (!lines) {
    problem = "Meta file is missing in the input directory: " + directory + ".";
    return {};
  }
  std::vector<MetaEntry> entries;
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream fields(line);
    std::string file;
    long long count = -1;
    if (!(fields >> file)) continue;
    if (!(fields >> count) || count < 0) {
      problem = meta.string() + " line " + std::to_string(number) +
                ": expected '<csv file> <number of examples>'";
      return {};
    }
    fs::path csv = fs::path(directory) / file;
    if (std::string not_a_file = regular_file_problem(csv.string()); !not_a_file.empty()) {
      problem = meta.string() + " line " + std::to_string(number) + " lists '" + file +
                "', which " +
                (not_a_file == "does not exist" ? "is not in " + directory : not_a_file);
      return {};
    }
    entries.push_back({csv, count});
  }
  return entries;
}

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string text_key(const DataloaderSpec& loader, std::string_view key, std::string fallback) {
  const config::Node* node = loader.params.find(key);
  return node && node->is_string() ? node->as_string() : fallback;
}

bool flag_key(const DataloaderSpec& loader, std::string_view key) {
  const config::Node* node = loader.params.find(key);
  return node && node->is_bool() && node->as_bool();
}

// A BERT vocabulary file: one token per line, its id the line's index.
class Vocabulary {
 public:
  Vocabulary(const std::string& path, bool lower, const std::string& oov_token) : path_(path) {
    std::istringstream lines(read_text(path));
    std::string token;
    while (std::getline(lines, token)) {
      while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
        token.pop_back();
      if (lower) token = lowered(token);
      ids_.emplace(token, static_cast<std::int32_t>(words_.size()));
      words_.push_back(token);
    }
    oov_ = require(oov_token, "oov_token");
  }

  std::int32_t require(const std::string& token, const std::string& role) const {
    auto found = ids_.find(token);
    if (found == ids_.end())
      throw std::runtime_error("vocab_file " + path_ + " has no " + role + " '" + token + "'");
    return found->second;
  }
  std::optional<std::int32_t> find(const std::string& token) const {
    auto found = ids_.find(token);
    if (found == ids_.end()) return std::nullopt;
    return found->second;
  }
  std::int32_t id(const std::string& token) const { return find(token).value_or(oov_); }
  const std::vector<std::string>& words() const { return words_; }
  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()); }

 private:
  std::string path_;
  std::vector<std::string> words_;
  std::unordered_map<std::string, std::int32_t> ids_;
  std::int32_t oov_ = 0;
};

const std::vector<std::string> kExcludedByDefault = {"[CLS]", "[SEP]", "[PAD]", "[MASK]"};

MaskingRules masking_rules(const DataloaderSpec& loader, const Vocabulary& vocab, bool lower,
                           std::int64_t predictions) {
  MaskingRules rules;
  rules.max_predictions = predictions;
  if (const config::Node* prob = loader.params.find("masked_lm_prob"))
    rules.masked_lm_prob = prob->as_number();
  std::string mask = text_key(loader, "mask_token", "[MASK]");
  rules.mask_id = vocab.require(lower ? lowered(mask) : mask, "mask_token");
  rules.whole_word = flag_key(loader, "mask_whole_word") || flag_key(loader, "whole_word_masking");
  rules.excluded.assign(static_cast<std::size_t>(vocab.size()), false);
  std::vector<std::string> excluded = kExcludedByDefault;
  if (const config::Node* list = loader.params.find("exclude_from_masking")) {
    excluded.clear();
    for (const config::Node& item : list->items())
      excluded.push_back(item.as_string());
  }
  for (const std::string& token : excluded) {
    if (auto id = vocab.find(lower ? lowered(token) : token))
      rules.excluded[static_cast<std::size_t>(*id)] = true;
  }
  for (std::int32_t id = 0; id < vocab.size(); ++id) {
    const std::string& word = vocab.words()[static_cast<std::size_t>(id)];
    rules.continues_word.push_back(word.starts_with("##"));
    if (!rules.excluded[static_cast<std::size_t>(id)]) rules.replacements.push_back(id);
  }
  return rules;
}

// The fields of the batch BERT reads, by position in the model's layout.
struct BertFields {
  std::size_t input_ids = 0, attention_mask = 0, token_type_ids = 0, positions = 0, labels = 0,
              weights = 0;
  std::optional<std::size_t> next_sentence;
  std::int64_t length = 0;
  std::int64_t predictions = 0;
  std::int64_t vocab_limit = 0;

  explicit BertFields(const std::vector<SampleField>& fields) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const std::string& name = fields[f].name;
      if (name == "input_ids") {
        input_ids = f;
        length = fields[f].elements;
        vocab_limit = fields[f].limit;
      }
      if (name == "attention_mask") attention_mask = f;
      if (name == "token_type_ids") token_type_ids = f;
      if (name == "masked_lm_positions") {
        positions = f;
        predictions = fields[f].elements;
      }
      if (name == "masked_lm_labels") labels = f;
      if (name == "masked_lm_weights") weights = f;
      if (name == "next_sentence_label") next_sentence = f;
    }
  }
};

// The CSV files of one data directory's meta.dat, each read as records after its header, with the
// header's column index.
struct CsvTable {
  std::string source;
  std::vector<std::string> header;
  std::vector<CsvRecord> records;  // the examples meta.dat counts

  std::optional<std::size_t> column(const std::string& name, bool needed,
                                    const std::string& columns) const {
    auto found = std::find(header.begin(), header.end(), name);
    if (found != header.end()) return static_cast<std::size_t>(found - header.begin());
    if (!needed) return std::nullopt;
    throw std::runtime_error(source + " line 1: the header has no column '" + name + "' (" +
                             columns + ")");
  }
};

std::vector<CsvTable> read_tables(const DataloaderSpec& loader) {
  std::vector<CsvTable> tables;
  for (const std::string& directory : loader.data_dirs) {
    std::string problem;
    std::vector<MetaEntry> entries = read_meta(directory, problem);
    if (!problem.empty()) throw std::runtime_error(problem);
    for (const MetaEntry& entry : entries) {
      std::string source = entry.file.string();
      std::vector<CsvRecord> records = parse_csv(read_text(entry.file), source);
      if (records.empty()) throw std::runtime_error(source + " is empty: expected a header line");
      auto available = static_cast<std::int64_t>(records.size()) - 1;
      if (available < entry.examples) {
        throw std::runtime_error(source + " holds " + std::to_string(available) +
                                 " examples but meta.dat lists " + std::to_string(entry.examples));
      }
      std::vector<std::string> header = std::move(records.front().fields);
      records.erase(records.begin());
      records.resize(static_cast<std::size_t>(entry.examples));
      tables.push_back({source, std::move(header), std::move(records)});
    }
  }
  if (tables.empty()) throw std::runtime_error("no CSV files in " + loader.data_dirs.front());
  return tables;
}

const std::string& record_field(const CsvRecord& record, std::size_t column) {
  if (column >= record.fields.size())
    throw std::invalid_argument("the record has " + std::to_string(record.fields.size()) +
                                " fields, fewer than the header's columns");
  return record.fields[column];
}

// BertCSVDynamicMaskDataProcessor's input, read into memory: token rows (columns tokens,
// segment_ids, is_random_next) of the CSV files meta.dat lists, masked anew for every epoch.
class BertCsvDataset : public Dataset {
 public:
  BertCsvDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields,
                 std::uint64_t seed)
      : fields_(fields), key_(graph::mix_keys(seed, 0x6d6c6dULL)) {
    bool lower = flag_key(loader, "do_lower");
    config::Diagnostics diagnostics;
    auto vocab_path = expand_path(*loader.params.find("vocab_file"), diagnostics);
    if (!vocab_path) throw std::runtime_error("vocab_file: " + diagnostics.all().front().message);
    Vocabulary vocab(*vocab_path, lower, text_key(loader, "oov_token", "[UNK]"));
    if (vocab.size() > fields_.vocab_limit) {
      throw std::runtime_error(
          "vocab_file " + *vocab_path + " holds " + std::to_string(vocab.size()) +
          " tokens but the model's vocab_size is " + std::to_string(fields_.vocab_limit) +
          "; set model.vocab_size to at least the vocabulary's size");
    }
    rules_ = masking_rules(loader, vocab, lower, fields_.predictions);
    truncate_ = flag_key(loader, "disable_nsp") || !fields_.next_sentence;
    for (const CsvTable& table : read_tables(loader))
      append(table, vocab, lower);
    if (size() == 0)
      throw std::runtime_error("no examples in the CSV files of " + loader.data_dirs.front());
  }

  std::int64_t size() const override { return static_cast<std::int64_t>(offsets_.size()) - 1; }

  void read(std::int64_t index, std::int64_t epoch, std::int64_t row,
            BatchData& batch) const override {
    auto begin = offsets_[static_cast<std::size_t>(index)];
    auto end = offsets_[static_cast<std::size_t>(index) + 1];
    std::span<const std::int32_t> ids(tokens_.data() + begin, end - begin);
    std::uint64_t key = graph::mix_keys(graph::mix_keys(key_, static_cast<std::uint64_t>(epoch)),
                                        static_cast<std::uint64_t>(index));
    MaskedSequence masked = mask_tokens(ids, rules_, key);
    auto place = [&](std::size_t field, std::int64_t width) {
      std::vector<std::int32_t>& values = batch.integers[field];
      auto first = values.begin() + row * width;
      std::fill(first, first + width, 0);
      return first;
    };
    std::copy(masked.input_ids.begin(), masked.input_ids.end(),
              place(fields_.input_ids, fields_.length));
    std::fill_n(place(fields_.attention_mask, fields_.length), ids.size(), 1);
    std::copy(segments_.begin() + begin, segments_.begin() + end,
              place(fields_.token_type_ids, fields_.length));
    std::copy(masked.positions.begin(), masked.positions.end(),
              place(fields_.positions, fields_.predictions));
    std::copy(masked.labels.begin(), masked.labels.end(),
              place(fields_.labels, fields_.predictions));
    std::copy(masked.weights.begin(), masked.weights.end(),
              batch.floats[fields_.weights].begin() + row * fields_.predictions);
    if (fields_.next_sentence)
      batch.integers[*fields_.next_sentence][static_cast<std::size_t>(row)] =
          next_sentence_[static_cast<std::size_t>(index)];
  }

 private:
  void append(const CsvTable& table, const Vocabulary& vocab, bool lower) {
    static const std::string kColumns = "BERT CSV columns: tokens, segment_ids, is_random_next";
    bool nsp = fields_.next_sentence.has_value();
    std::size_t tokens = *table.column("tokens", true, kColumns);
    auto segments = table.column("segment_ids", nsp, kColumns);
    auto random_next = table.column("is_random_next", nsp, kColumns);
    for (const CsvRecord& record : table.records) {
      try {
        append_example(record, tokens, segments, random_next, vocab, lower);
      } catch (const std::invalid_argument& error) {
        throw std::runtime_error(table.source + " line " + std::to_string(record.line) + ": " +
                                 error.what());
      }
    }
  }

  void append_example(const CsvRecord& record, std::size_t tokens_column,
                      std::optional<std::size_t> segments_column,
                      std::optional<std::size_t> random_next_column, const Vocabulary& vocab,
                      bool lower) {
    auto field = [&](std::size_t column) -> const std::string& {
      return record_field(record, column);
    };
    std::vector<std::string> tokens = parse_string_list(field(tokens_column));
    auto length = static_cast<std::int64_t>(tokens.size());
    if (length > fields_.length && !truncate_) {
      throw std::invalid_argument(
          std::to_string(length) + " tokens, more than max_sequence_length " +
          std::to_string(fields_.length) + " (with the NSP head every sequence must fit)");
    }
    tokens.resize(static_cast<std::size_t>(std::min(length, fields_.length)));
    std::vector<std::int64_t> segments(tokens.size(), 0);
    if (segments_column) {
      std::vector<std::int64_t> given = parse_integer_list(field(*segments_column));
      std::copy_n(given.begin(), std::min(given.size(), segments.size()), segments.begin());
    }
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      tokens_.push_back(vocab.id(lower ? lowered(tokens[t]) : tokens[t]));
      if (segments[t] != 0 && segments[t] != 1)
        throw std::invalid_argument("segment id " + std::to_string(segments[t]) +
                                    " (segment ids are 0 or 1)");
      segments_.push_back(static_cast<std::int32_t>(segments[t]));
    }
    offsets_.push_back(static_cast<std::int64_t>(tokens_.size()));
    std::int32_t label = 0;
    if (random_next_column) {
      const std::string& text = field(*random_next_column);
      if (text != "0" && text != "1" && text != "True" && text != "False")
        throw std::invalid_argument("is_random_next is '" + text + "' (expected 0 or 1)");
      label = text == "1" || text == "True" ? 1 : 0;
    }
    next_sentence_.push_back(label);
  }

  BertFields fields_;
  std::uint64_t key_;
  MaskingRules rules_;
  bool truncate_ = false;
  std::vector<std::int32_t> tokens_;
  std::vector<std::int32_t> segments_;
  std::vector<std::int64_t> offsets_{0};
  std::vector<std::int32_t> next_sentence_;
};

// BertCSVDataProcessor's input, read into memory: examples masked when the files were written
// (columns input_ids, attention_mask, token_type_ids, masked_lm_positions, labels,
// masked_lm_weights, next_sentence_label; each a list literal).
class BertStaticCsvDataset : public Dataset {
 public:
  BertStaticCsvDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields)
      : fields_(fields) {
    for (const CsvTable& table : read_tables(loader)) {
      std::vector<Column> columns = columns_of(table);
      for (const CsvRecord& record : table.records) {
        try {
          append(record, columns);
        } catch (const std::invalid_argument& error) {
          throw std::runtime_error(table.source + " line " + std::to_string(record.line) + ": " +
                                   error.what());
        }
      }
      examples_ += static_cast<std::int64_t>(table.records.size());
    }
    if (examples_ == 0)
      throw std::runtime_error("no examples in the CSV files of " + loader.data_dirs.front());
  }

  std::int64_t size() const override { return examples_; }

  void read(std::int64_t index, std::int64_t, std::int64_t row, BatchData& batch) const override {
    for (std::size_t f = 0; f < values_.size(); ++f) {
      const Stored& stored = values_[f];
      auto first = stored.values.begin() + index * stored.width;
      if (stored.integer) {
        std::copy(first, first + stored.width, batch.integers[f].begin() + row * stored.width);
      } else {
        std::transform(first, first + stored.width, batch.floats[f].begin() + row * stored.width,
                       [](std::int64_t v) { return static_cast<float>(v); });
      }
    }
  }

 private:
  struct Column {
    std::size_t index;
    std::size_t field;
  };
  struct Stored {
    bool integer = true;
    std::int64_t width = 0;
    std::vector<std::int32_t> values;
  };

  static std::string column_name(const std::string& field) {
    if (field == "masked_lm_labels") return "labels";
    return field;
  }

  std::vector<Column> columns_of(const CsvTable& table) {
    static const std::string kColumns =
        "BertCSVDataProcessor columns: input_ids, attention_mask, token_type_ids, "
        "masked_lm_positions, labels, masked_lm_weights, next_sentence_label";
    std::vector<Column> columns;
    values_.resize(fields_.size());
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      values_[f].integer = fields_[f].integer;
      values_[f].width = fields_[f].elements;
      columns.push_back({*table.column(column_name(fields_[f].name), true, kColumns), f});
    }
    return columns;
  }

  void append(const CsvRecord& record, const std::vector<Column>& columns) {
    for (const Column& column : columns) {
      const SampleField& field = fields_[column.field];
      const std::string& text = record_field(record, column.index);
      std::vector<std::int64_t> items =
          text.starts_with("[") ? parse_integer_list(text) : parse_integer_list("[" + text + "]");
      if (static_cast<std::int64_t>(items.size()) != field.elements) {
        throw std::invalid_argument(column_name(field.name) + " holds " +
                                    std::to_string(items.size()) + " values; the model reads " +
                                    std::to_string(field.elements));
      }
      for (std::int64_t item : items) {
        if (field.integer && field.limit > 0 && (item < 0 || item >= field.limit)) {
          throw std::invalid_argument(column_name(field.name) + " holds " + std::to_string(item) +
                                      ", outside [0, " + std::to_string(field.limit) + ")");
        }
        values_[column.field].values.push_back(static_cast<std::int32_t>(item));
      }
    }
  }

  std::vector<SampleField> fields_;
  std::vector<Stored> values_;
  std::int64_t examples_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> open_bert_csv(const DataloaderSpec& loader,
                                       const std::vector<SampleField>& fields, std::uint64_t seed) {
  if (loader.processor == "BertCSVDataProcessor")
    return std::make_unique<BertStaticCsvDataset>(loader, fields);
  return std::make_unique<BertCsvDataset>(loader, fields, seed);
}

// BertCSVDynamicMaskDataProcessor reads the CSV files that data_dir/meta.dat lists, one
// "<file> <number of examples>" per line, and a vocabulary file.
DatasetFacts check_bert_csv_files(const DataloaderSpec& loader, config::Diagnostics& diagnostics) {
  const config::Node& data_dir = *loader.params.find("data_dir");
  if (const config::Node* gather = loader.params.find("gather_mlm_labels");
      gather && gather->is_bool() && !gather->as_bool()) {
    diagnostics.error(gather->mark(), gather->path(),
                      "gather_mlm_labels: false is not supported: csrun's BERT reads the labels "
                      "of the masked positions only (gathered, the Model Zoo's default: true)");
  }
  std::int64_t examples = 0;
  for (const std::string& directory : loader.data_dirs) {
    if (!require_directory(directory, data_dir, diagnostics)) continue;
    std::string problem;
    for (const MetaEntry& entry : read_meta(directory, problem))
      examples += entry.examples;
    if (!problem.empty()) diagnostics.error(data_dir.mark(), data_dir.path(), problem);
  }
  if (const config::Node* vocab = loader.params.find("vocab_file")) {
    if (auto path = expand_path(*vocab, diagnostics)) require_file(*path, *vocab, diagnostics);
  }
  if (examples > 0 && examples < loader.batch_size) {
    diagnostics.error(data_dir.mark(), data_dir.path(),
                      "the dataset holds " + std::to_string(examples) +
                          " examples, fewer than one batch of batch_size " +
                          std::to_string(loader.batch_size));
  }
  return {examples, std::nullopt, std::nullopt};
}

}  // namespace csrun::data

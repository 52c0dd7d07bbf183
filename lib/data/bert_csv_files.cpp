#include <algorithm>
#include <stdexcept>

#include "csv_tables.hpp"
#include "data_paths.hpp"
#include "dataset.hpp"
#include "graph/counter_rng.hpp"
#include "masked_lm.hpp"
#include "processor_registry.hpp"
#include "vocabulary.hpp"

namespace csrun::data {

namespace {

const std::vector<std::string> kExcludedByDefault = {"[CLS]", "[SEP]", "[PAD]", "[MASK]"};

MaskingRules masking_rules(const DataloaderSpec& loader, const Vocabulary& vocab, bool lower,
                           std::int64_t predictions) {
  MaskingRules rules;
  rules.max_predictions = predictions;
  if (const config::Node* prob = loader.params.find("masked_lm_prob"))
    rules.masked_lm_prob = prob->as_number();
  std::string mask = loader_text(loader, "mask_token", "[MASK]");
  rules.mask_id = vocab.require(lower ? lowered(mask) : mask, "mask_token");
  rules.whole_word =
      loader_flag(loader, "mask_whole_word") || loader_flag(loader, "whole_word_masking");
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

// BertCSVDynamicMaskDataProcessor's input, read into memory: token rows (columns tokens,
// segment_ids, is_random_next) of the CSV files meta.dat lists, masked anew for every epoch.
class BertCsvDataset : public Dataset {
 public:
  BertCsvDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields,
                 std::uint64_t seed)
      : fields_(fields), key_(graph::mix_keys(seed, 0x6d6c6dULL)) {
    bool lower = loader_flag(loader, "do_lower");
    config::Diagnostics diagnostics;
    auto vocab_path = expand_path(*loader.params.find("vocab_file"), diagnostics);
    if (!vocab_path) throw std::runtime_error("vocab_file: " + diagnostics.all().front().message);
    Vocabulary vocab(*vocab_path, lower, loader_text(loader, "oov_token", "[UNK]"));
    if (vocab.size() > fields_.vocab_limit) {
      throw std::runtime_error(
          "vocab_file " + *vocab_path + " holds " + std::to_string(vocab.size()) +
          " tokens but the model's vocab_size is " + std::to_string(fields_.vocab_limit) +
          "; set model.vocab_size to at least the vocabulary's size");
    }
    rules_ = masking_rules(loader, vocab, lower, fields_.predictions);
    truncate_ = loader_flag(loader, "disable_nsp") || !fields_.next_sentence;
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
  if (const config::Node* gather = loader.params.find("gather_mlm_labels");
      gather && gather->is_bool() && !gather->as_bool()) {
    diagnostics.error(gather->mark(), gather->path(),
                      "gather_mlm_labels: false is not supported: csrun's BERT reads the labels "
                      "of the masked positions only (gathered, the Model Zoo's default: true)");
  }
  std::int64_t examples = check_meta_files(loader, diagnostics);
  if (const config::Node* vocab = loader.params.find("vocab_file")) {
    if (auto path = expand_path(*vocab, diagnostics)) require_file(*path, *vocab, diagnostics);
  }
  return {examples, std::nullopt, std::nullopt};
}

}  // namespace csrun::data

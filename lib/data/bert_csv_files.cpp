#include <algorithm>
#include <stdexcept>

#include "csv_examples.hpp"
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

// A CSV record's error, named with its file and line.
template <class Body>
auto at_record(const CsvFile& file, const CsvRecord& record, Body&& body) {
  try {
    return body();
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(file.source + " line " + std::to_string(record.line) + ": " +
                             error.what());
  }
}

// BertCSVDynamicMaskDataProcessor's input: token rows (columns tokens, segment_ids,
// is_random_next) of the CSV files meta.dat lists, each read and tokenized when a batch needs it
// and masked anew for every epoch.
class BertCsvDataset : public Dataset {
 public:
  BertCsvDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields,
                 std::uint64_t seed)
      : fields_(fields),
        key_(graph::mix_keys(seed, 0x6d6c6dULL)),
        lower_(loader_flag(loader, "do_lower")),
        vocab_path_(vocabulary_path(loader)),
        vocab_(vocab_path_, lower_, loader_text(loader, "oov_token", "[UNK]")),
        examples_(loader) {
    if (vocab_.size() > fields_.vocab_limit) {
      throw std::runtime_error(
          "vocab_file " + vocab_path_ + " holds " + std::to_string(vocab_.size()) +
          " tokens but the model's vocab_size is " + std::to_string(fields_.vocab_limit) +
          "; set model.vocab_size to at least the vocabulary's size");
    }
    rules_ = masking_rules(loader, vocab_, lower_, fields_.predictions);
    truncate_ = loader_flag(loader, "disable_nsp") || !fields_.next_sentence;
    static const std::string kColumns = "BERT CSV columns: tokens, segment_ids, is_random_next";
    bool nsp = fields_.next_sentence.has_value();
    for (const CsvFile& file : examples_.files()) {
      columns_.push_back({*file.column("tokens", true, kColumns),
                          file.column("segment_ids", nsp, kColumns),
                          file.column("is_random_next", nsp, kColumns)});
    }
    if (size() == 0)
      throw std::runtime_error("no examples in the CSV files of " + loader.data_dirs.front());
  }

  std::int64_t size() const override { return examples_.size(); }

  void read(std::int64_t index, std::int64_t epoch, std::int64_t row,
            BatchData& batch) const override {
    CsvExamples::Example found = examples_.read(index);
    const CsvFile& file = examples_.files()[found.file];
    Tokens example =
        at_record(file, found.record, [&] { return tokens(found.record, columns_[found.file]); });
    std::uint64_t key = graph::mix_keys(graph::mix_keys(key_, static_cast<std::uint64_t>(epoch)),
                                        static_cast<std::uint64_t>(index));
    MaskedSequence masked = mask_tokens(example.ids, rules_, key);
    auto place = [&](std::size_t field, std::int64_t width) {
      std::vector<std::int32_t>& values = batch.integers[field];
      auto first = values.begin() + row * width;
      std::fill(first, first + width, 0);
      return first;
    };
    std::copy(masked.input_ids.begin(), masked.input_ids.end(),
              place(fields_.input_ids, fields_.length));
    std::fill_n(place(fields_.attention_mask, fields_.length), example.ids.size(), 1);
    std::copy(example.segments.begin(), example.segments.end(),
              place(fields_.token_type_ids, fields_.length));
    std::copy(masked.positions.begin(), masked.positions.end(),
              place(fields_.positions, fields_.predictions));
    std::copy(masked.labels.begin(), masked.labels.end(),
              place(fields_.labels, fields_.predictions));
    std::copy(masked.weights.begin(), masked.weights.end(),
              batch.floats[fields_.weights].begin() + row * fields_.predictions);
    if (fields_.next_sentence)
      batch.integers[*fields_.next_sentence][static_cast<std::size_t>(row)] = example.random_next;
  }

 private:
  struct Columns {
    std::size_t tokens;
    std::optional<std::size_t> segments, random_next;
  };

  struct Tokens {
    std::vector<std::int32_t> ids, segments;
    std::int32_t random_next = 0;
  };

  static std::string vocabulary_path(const DataloaderSpec& loader) {
    config::Diagnostics diagnostics;
    auto path = expand_path(*loader.params.find("vocab_file"), diagnostics);
    if (!path) throw std::runtime_error("vocab_file: " + diagnostics.all().front().message);
    return *path;
  }

  Tokens tokens(const CsvRecord& record, const Columns& columns) const {
    auto field = [&](std::size_t column) -> const std::string& {
      return record_field(record, column);
    };
    std::vector<std::string> words = parse_string_list(field(columns.tokens));
    auto length = static_cast<std::int64_t>(words.size());
    if (length > fields_.length && !truncate_) {
      throw std::invalid_argument(
          std::to_string(length) + " tokens, more than max_sequence_length " +
          std::to_string(fields_.length) + " (with the NSP head every sequence must fit)");
    }
    words.resize(static_cast<std::size_t>(std::min(length, fields_.length)));
    Tokens example;
    std::vector<std::int64_t> segments(words.size(), 0);
    if (columns.segments) {
      std::vector<std::int64_t> given = parse_integer_list(field(*columns.segments));
      std::copy_n(given.begin(), std::min(given.size(), segments.size()), segments.begin());
    }
    for (std::size_t t = 0; t < words.size(); ++t) {
      example.ids.push_back(vocab_.id(lower_ ? lowered(words[t]) : words[t]));
      if (segments[t] != 0 && segments[t] != 1)
        throw std::invalid_argument("segment id " + std::to_string(segments[t]) +
                                    " (segment ids are 0 or 1)");
      example.segments.push_back(static_cast<std::int32_t>(segments[t]));
    }
    if (columns.random_next) {
      const std::string& text = field(*columns.random_next);
      if (text != "0" && text != "1" && text != "True" && text != "False")
        throw std::invalid_argument("is_random_next is '" + text + "' (expected 0 or 1)");
      example.random_next = text == "1" || text == "True" ? 1 : 0;
    }
    return example;
  }

  BertFields fields_;
  std::uint64_t key_;
  bool lower_;
  std::string vocab_path_;
  Vocabulary vocab_;
  CsvExamples examples_;
  std::vector<Columns> columns_;  // per file
  MaskingRules rules_;
  bool truncate_ = false;
};

// BertCSVDataProcessor's input: examples masked when the files were written (columns input_ids,
// attention_mask, token_type_ids, masked_lm_positions, labels, masked_lm_weights,
// next_sentence_label; each a list literal), each read and checked when a batch needs it.
class BertStaticCsvDataset : public Dataset {
 public:
  BertStaticCsvDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields)
      : fields_(fields), examples_(loader) {
    static const std::string kColumns =
        "BertCSVDataProcessor columns: input_ids, attention_mask, token_type_ids, "
        "masked_lm_positions, labels, masked_lm_weights, next_sentence_label";
    for (const CsvFile& file : examples_.files()) {
      std::vector<std::size_t>& columns = columns_.emplace_back();
      for (const SampleField& field : fields_)
        columns.push_back(*file.column(column_name(field.name), true, kColumns));
    }
    if (size() == 0)
      throw std::runtime_error("no examples in the CSV files of " + loader.data_dirs.front());
  }

  std::int64_t size() const override { return examples_.size(); }

  void read(std::int64_t index, std::int64_t, std::int64_t row, BatchData& batch) const override {
    CsvExamples::Example found = examples_.read(index);
    const CsvFile& file = examples_.files()[found.file];
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      std::vector<std::int64_t> items = at_record(
          file, found.record, [&] { return values(found.record, columns_[found.file][f], f); });
      std::int64_t width = fields_[f].elements;
      if (fields_[f].integer) {
        std::copy(items.begin(), items.end(), batch.integers[f].begin() + row * width);
      } else {
        std::transform(items.begin(), items.end(), batch.floats[f].begin() + row * width,
                       [](std::int64_t v) { return static_cast<float>(v); });
      }
    }
  }

 private:
  static std::string column_name(const std::string& field) {
    if (field == "masked_lm_labels") return "labels";
    return field;
  }

  // Field `f`'s values in column `column` of the record, checked against what the model reads.
  std::vector<std::int64_t> values(const CsvRecord& record, std::size_t column,
                                   std::size_t f) const {
    const SampleField& field = fields_[f];
    const std::string& text = record_field(record, column);
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
    }
    return items;
  }

  std::vector<SampleField> fields_;
  CsvExamples examples_;
  std::vector<std::vector<std::size_t>> columns_;  // per file, per field
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
  return {examples, std::nullopt, std::nullopt, std::nullopt};
}

}  // namespace csrun::data

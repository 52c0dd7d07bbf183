// The encoder-decoder networks' text inputs: T5DynamicDataProcessor (documents of tokens,
// corrupted into spans and their sentinels, anew every epoch) and TransformerDynamicDataProcessor
// (parallel source and target lines). Both read a vocabulary file (one token a line, its id the
// line's index) and whitespace-separated tokens, one document or sentence a line.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "csv_tables.hpp"
#include "data_paths.hpp"
#include "dataset.hpp"
#include "graph/counter_rng.hpp"
#include "processor_registry.hpp"
#include "vocabulary.hpp"

namespace csrun::data {

namespace fs = std::filesystem;

namespace {

// T5's span corruption: 15% of a piece's tokens, in spans of 3 on average.
constexpr double kNoiseDensity = 0.15;
constexpr double kMeanSpan = 3.0;

struct SpanCounts {
  std::int64_t noise = 0;
  std::int64_t spans = 0;
};

// How many tokens of a piece of `length` become noise and in how many spans (T5's
// random_spans_noise_mask), for length >= 2.
SpanCounts span_counts(std::int64_t length) {
  auto noise = static_cast<std::int64_t>(std::lround(static_cast<double>(length) * kNoiseDensity));
  noise = std::clamp<std::int64_t>(noise, 1, length - 1);
  auto spans = static_cast<std::int64_t>(std::lround(static_cast<double>(noise) / kMeanSpan));
  spans = std::clamp<std::int64_t>(spans, 1, std::min(noise, length - noise));
  return {noise, spans};
}

// The longest piece of a document whose corrupted input (the kept tokens and a sentinel per
// span) fits `source` positions and whose target (each span's sentinel and tokens, then </s>)
// fits `target`; 0 when not even two tokens fit.
std::int64_t piece_length(std::int64_t source, std::int64_t target) {
  std::int64_t best = 0;
  for (std::int64_t length = 2;; ++length) {
    SpanCounts counts = span_counts(length);
    bool fits =
        length - counts.noise + counts.spans <= source && counts.noise + counts.spans + 1 <= target;
    if (!fits && length > source) return best;
    if (fits) best = length;
  }
}

// The positions of the batch fields the two processors fill, and their sizes.
struct Seq2SeqFields {
  std::size_t input_ids = 0, attention_mask = 0, decoder_input_ids = 0, decoder_attention_mask = 0,
              labels = 0;
  std::int64_t source = 0, target = 0;
  std::int64_t source_vocab = 0, target_vocab = 0;

  explicit Seq2SeqFields(const std::vector<SampleField>& fields) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const std::string& name = fields[f].name;
      if (name == "input_ids") {
        input_ids = f;
        source = fields[f].elements;
        source_vocab = fields[f].limit;
      }
      if (name == "attention_mask") attention_mask = f;
      if (name == "decoder_input_ids") {
        decoder_input_ids = f;
        target = fields[f].elements;
        target_vocab = fields[f].limit;
      }
      if (name == "decoder_attention_mask") decoder_attention_mask = f;
      if (name == "labels") labels = f;
    }
  }
};

// The special tokens' ids and the vocabulary the tokens are read with.
struct Tokens {
  Vocabulary vocab;
  std::int32_t start = 0, end = 0, input_pad = 0, label_pad = 0;
  std::int64_t extra_ids = 0;

  explicit Tokens(const DataloaderSpec& loader)
      : vocab(vocabulary_path(loader), loader_flag(loader, "do_lower"),
              loader_text(loader, "oov_token", "<unk>")) {
    start = vocab.require(loader_text(loader, "sos_token", "<s>"), "sos_token");
    end = vocab.require(loader_text(loader, "eos_token", "</s>"), "eos_token");
    std::int32_t pad = vocab.require(loader_text(loader, "pad_token", "<pad>"), "pad_token");
    input_pad = pad_id(loader, "input_pad_id", pad);
    label_pad = pad_id(loader, "labels_pad_id", pad);
    if (const config::Node* extra = loader.params.find("extra_ids")) extra_ids = extra->as_int();
  }

  std::vector<std::int32_t> ids(const std::string& line) const {
    std::istringstream words(line);
    std::vector<std::int32_t> result;
    for (std::string word; words >> word;)
      result.push_back(vocab.id(word));
    return result;
  }

  // The ids the data can hold: the vocabulary's and the sentinels after it.
  std::int64_t limit() const { return vocab.size() + extra_ids; }

 private:
  static std::string vocabulary_path(const DataloaderSpec& loader) {
    config::Diagnostics diagnostics;
    auto path = expand_path(*loader.params.find("src_vocab_file"), diagnostics);
    if (!path) throw std::runtime_error("src_vocab_file: " + diagnostics.all().front().message);
    if (std::string problem = regular_file_problem(*path); !problem.empty())
      throw std::runtime_error("src_vocab_file " + *path + " " + problem);
    return *path;
  }

  static std::int32_t pad_id(const DataloaderSpec& loader, const char* key, std::int32_t fallback) {
    const config::Node* id = loader.params.find(key);
    return id ? static_cast<std::int32_t>(id->as_int()) : fallback;
  }
};

std::string source_directory(const DataloaderSpec& loader) {
  config::Diagnostics diagnostics;
  auto path = expand_path(*loader.params.find("src_data_dir"), diagnostics);
  if (!path) throw std::runtime_error("src_data_dir: " + diagnostics.all().front().message);
  return *path;
}

std::vector<std::string> lines_of(const fs::path& path) {
  if (std::string problem = regular_file_problem(path.string()); !problem.empty())
    throw std::runtime_error(path.string() + " " + problem);
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path.string());
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) {
    line.erase(std::remove(line.begin(), line.end(), '\0'), line.end());
    lines.push_back(std::move(line));
  }
  return lines;
}

void check_vocabulary_fits(const Tokens& tokens, const Seq2SeqFields& fields) {
  std::int64_t model = std::min(fields.source_vocab, fields.target_vocab);
  if (tokens.limit() <= model) return;
  throw std::runtime_error(
      "src_vocab_file " + tokens.vocab.path() + " holds " + std::to_string(tokens.vocab.size()) +
      " tokens and extra_ids adds " + std::to_string(tokens.extra_ids) +
      " sentinels, more than the model's vocabulary of " + std::to_string(model) +
      " (src_vocab_size + extra_ids); make the model's vocabulary at least as large");
}

// Writes `ids` into row `row` of field `f` (`width` values a row), padded with `pad`, and its mask.
void write_padded(BatchData& batch, std::size_t f, std::size_t mask, std::int64_t width,
                  std::int64_t row, std::span<const std::int32_t> ids, std::int32_t pad) {
  if (static_cast<std::int64_t>(ids.size()) > width)
    throw std::logic_error("a sequence of " + std::to_string(ids.size()) + " ids in a row of " +
                           std::to_string(width));
  auto at = static_cast<std::size_t>(row * width);
  std::vector<std::int32_t>& values = batch.integers[f];
  std::fill(values.begin() + static_cast<std::ptrdiff_t>(at),
            values.begin() + static_cast<std::ptrdiff_t>(at + static_cast<std::size_t>(width)),
            pad);
  std::copy(ids.begin(), ids.end(), values.begin() + static_cast<std::ptrdiff_t>(at));
  if (mask == f) return;
  std::vector<std::int32_t>& keep = batch.integers[mask];
  for (std::int64_t i = 0; i < width; ++i)
    keep[at + static_cast<std::size_t>(i)] = i < static_cast<std::int64_t>(ids.size()) ? 1 : 0;
}

// A sequence-to-sequence example: the encoder's ids and the target (without <s> and </s>).
void write_example(BatchData& batch, const Seq2SeqFields& fields, const Tokens& tokens,
                   std::int64_t row, std::span<const std::int32_t> source,
                   std::span<const std::int32_t> target) {
  write_padded(batch, fields.input_ids, fields.attention_mask, fields.source, row, source,
               tokens.input_pad);
  std::vector<std::int32_t> shifted = {tokens.start};
  shifted.insert(shifted.end(), target.begin(), target.end());
  write_padded(batch, fields.decoder_input_ids, fields.decoder_attention_mask, fields.target, row,
               shifted, tokens.input_pad);
  std::vector<std::int32_t> labels(target.begin(), target.end());
  labels.push_back(tokens.end);
  write_padded(batch, fields.labels, fields.labels, fields.target, row, labels, tokens.label_pad);
}

// `items` split into `segments` runs of at least one, at cut points drawn from `key`.
std::vector<std::int64_t> segment_lengths(std::int64_t items, std::int64_t segments,
                                          std::uint64_t key) {
  std::vector<std::int64_t> cuts = graph::permutation(items - 1, key);
  cuts.resize(static_cast<std::size_t>(segments - 1));
  for (std::int64_t& cut : cuts)
    ++cut;
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::int64_t> lengths;
  std::int64_t previous = 0;
  for (std::int64_t cut : cuts) {
    lengths.push_back(cut - previous);
    previous = cut;
  }
  lengths.push_back(items - previous);
  return lengths;
}

// T5DynamicDataProcessor's input: each document split into pieces that corrupt to fit the
// source and target lengths; a piece's noise spans are drawn anew every epoch.
class T5TextDataset : public Dataset {
 public:
  T5TextDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields,
                std::uint64_t seed)
      : fields_(fields), tokens_(loader), key_(graph::mix_keys(seed, 0x7435ULL)) {
    check_vocabulary_fits(tokens_, fields_);
    std::int64_t piece = piece_length(fields_.source, fields_.target);
    if (piece < 2) {
      throw std::runtime_error("tgt_max_sequence_length " + std::to_string(fields_.target) +
                               " leaves no room for a corrupted span and its sentinel");
    }
    std::string directory = source_directory(loader);
    std::string problem;
    std::vector<MetaEntry> entries = read_meta(directory, problem);
    if (!problem.empty()) throw std::runtime_error(problem);
    offsets_.push_back(0);
    for (const MetaEntry& entry : entries) {
      for (const std::string& line : lines_of(entry.file))
        append_pieces(tokens_.ids(line), piece);
    }
    if (size() == 0) {
      throw std::runtime_error("no document of two or more tokens in the files " + directory +
                               "/meta.dat lists");
    }
  }

  std::int64_t size() const override { return static_cast<std::int64_t>(offsets_.size()) - 1; }

  void read(std::int64_t index, std::int64_t epoch, std::int64_t row,
            BatchData& batch) const override {
    auto begin = offsets_[static_cast<std::size_t>(index)];
    auto end = offsets_[static_cast<std::size_t>(index) + 1];
    std::span<const std::int32_t> text(ids_.data() + begin, end - begin);
    std::uint64_t key = graph::mix_keys(graph::mix_keys(key_, static_cast<std::uint64_t>(epoch)),
                                        static_cast<std::uint64_t>(index));
    auto length = static_cast<std::int64_t>(text.size());
    SpanCounts counts = span_counts(length);
    std::vector<std::int64_t> noise = segment_lengths(counts.noise, counts.spans, key);
    std::vector<std::int64_t> kept =
        segment_lengths(length - counts.noise, counts.spans, graph::mix_keys(key, 1));
    std::vector<std::int32_t> source;
    std::vector<std::int32_t> target;
    std::int64_t at = 0;
    for (std::size_t span = 0; span < noise.size(); ++span) {
      source.insert(source.end(), text.begin() + at, text.begin() + at + kept[span]);
      at += kept[span];
      auto sentinel =
          static_cast<std::int32_t>(tokens_.limit() - 1 - static_cast<std::int64_t>(span));
      source.push_back(sentinel);
      target.push_back(sentinel);
      target.insert(target.end(), text.begin() + at, text.begin() + at + noise[span]);
      at += noise[span];
    }
    write_example(batch, fields_, tokens_, row, source, target);
  }

 private:
  void append_pieces(const std::vector<std::int32_t>& document, std::int64_t piece) {
    for (std::size_t start = 0; start + 2 <= document.size();
         start += static_cast<std::size_t>(piece)) {
      std::size_t stop = std::min(document.size(), start + static_cast<std::size_t>(piece));
      if (stop - start < 2) break;
      ids_.insert(ids_.end(), document.begin() + static_cast<std::ptrdiff_t>(start),
                  document.begin() + static_cast<std::ptrdiff_t>(stop));
      offsets_.push_back(ids_.size());
    }
  }

  Seq2SeqFields fields_;
  Tokens tokens_;
  std::uint64_t key_;
  std::vector<std::int32_t> ids_;
  std::vector<std::size_t> offsets_;
};

// A Transformer meta.dat line: "<source file> <target file> <number of lines>"; a relative path
// is taken as written (from the working directory, as the Model Zoo does), else in src_data_dir.
struct ParallelFiles {
  fs::path source;
  fs::path target;
};

fs::path listed_path(const std::string& written, const std::string& directory) {
  fs::path path(written);
  if (path.is_absolute() || fs::exists(path)) return path;
  return fs::path(directory) / path;
}

std::vector<ParallelFiles> read_parallel_meta(const std::string& directory) {
  fs::path meta = fs::path(directory) / "meta.dat";
  std::vector<ParallelFiles> files;
  std::vector<std::string> lines = lines_of(meta);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::istringstream fields(lines[n]);
    std::string source, target;
    long long count = -1;
    if (!(fields >> source)) continue;
    if (!(fields >> target >> count) || count < 0) {
      throw std::runtime_error(meta.string() + " line " + std::to_string(n + 1) +
                               ": expected '<source file> <target file> <number of lines>'");
    }
    files.push_back({listed_path(source, directory), listed_path(target, directory)});
  }
  return files;
}

// TransformerDynamicDataProcessor's input: sentence pairs, kept when each side is non-empty and
// shorter than its maximum length (room for <s> or </s>), as the Model Zoo keeps them.
class ParallelTextDataset : public Dataset {
 public:
  ParallelTextDataset(const DataloaderSpec& loader, const std::vector<SampleField>& fields)
      : fields_(fields), tokens_(loader) {
    check_vocabulary_fits(tokens_, fields_);
    std::string directory = source_directory(loader);
    source_offsets_.push_back(0);
    target_offsets_.push_back(0);
    for (const ParallelFiles& files : read_parallel_meta(directory))
      append(files);
    if (size() == 0) {
      throw std::runtime_error("no sentence pair in the files " + directory +
                               "/meta.dat lists is shorter than src_max_sequence_length " +
                               std::to_string(fields_.source) + " and tgt_max_sequence_length " +
                               std::to_string(fields_.target));
    }
  }

  std::int64_t size() const override {
    return static_cast<std::int64_t>(source_offsets_.size()) - 1;
  }

  void read(std::int64_t index, std::int64_t, std::int64_t row, BatchData& batch) const override {
    auto i = static_cast<std::size_t>(index);
    std::span<const std::int32_t> source(source_ids_.data() + source_offsets_[i],
                                         source_offsets_[i + 1] - source_offsets_[i]);
    std::span<const std::int32_t> target(target_ids_.data() + target_offsets_[i],
                                         target_offsets_[i + 1] - target_offsets_[i]);
    write_example(batch, fields_, tokens_, row, source, target);
  }

 private:
  void append(const ParallelFiles& files) {
    std::vector<std::string> sources = lines_of(files.source);
    std::vector<std::string> targets = lines_of(files.target);
    if (sources.size() != targets.size()) {
      throw std::runtime_error(files.source.string() + " holds " + std::to_string(sources.size()) +
                               " lines but " + files.target.string() + " holds " +
                               std::to_string(targets.size()) + "; each line pairs with one");
    }
    for (std::size_t n = 0; n < sources.size(); ++n) {
      std::vector<std::int32_t> source = tokens_.ids(sources[n]);
      std::vector<std::int32_t> target = tokens_.ids(targets[n]);
      auto fits = [](const std::vector<std::int32_t>& ids, std::int64_t limit) {
        return !ids.empty() && static_cast<std::int64_t>(ids.size()) < limit;
      };
      if (!fits(source, fields_.source) || !fits(target, fields_.target)) continue;
      source_ids_.insert(source_ids_.end(), source.begin(), source.end());
      target_ids_.insert(target_ids_.end(), target.begin(), target.end());
      source_offsets_.push_back(source_ids_.size());
      target_offsets_.push_back(target_ids_.size());
    }
  }

  Seq2SeqFields fields_;
  Tokens tokens_;
  std::vector<std::int32_t> source_ids_, target_ids_;
  std::vector<std::size_t> source_offsets_, target_offsets_;
};

}  // namespace

std::unique_ptr<Dataset> open_seq2seq_text(const DataloaderSpec& loader,
                                           const std::vector<SampleField>& fields,
                                           std::uint64_t seed) {
  if (loader.processor == "TransformerDynamicDataProcessor")
    return std::make_unique<ParallelTextDataset>(loader, fields);
  return std::make_unique<T5TextDataset>(loader, fields, seed);
}

// Both processors read src_data_dir/meta.dat and the files it lists, and src_vocab_file.
DatasetFacts check_seq2seq_text_files(const DataloaderSpec& loader,
                                      config::Diagnostics& diagnostics) {
  const config::Node* directory = loader.params.find("src_data_dir");
  const config::Node* vocab = loader.params.find("src_vocab_file");
  if (vocab) {
    if (auto path = expand_path(*vocab, diagnostics)) require_file(*path, *vocab, diagnostics);
  }
  if (!directory) return {};
  auto path = expand_path(*directory, diagnostics);
  if (!path || !require_directory(*path, *directory, diagnostics)) return {};
  fs::path meta = fs::path(*path) / "meta.dat";
  if (std::string problem = regular_file_problem(meta.string()); !problem.empty()) {
    diagnostics.error(directory->mark(), directory->path(),
                      meta.string() + " " + problem +
                          " (it lists the data files: '<file> <documents>' a line for T5, "
                          "'<source file> <target file> <lines>' for the Transformer)");
  }
  return {};
}

}  // namespace csrun::data

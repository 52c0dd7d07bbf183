// BertCSVDynamicMaskDataProcessor input: the CSV records and list literals, the masking rules,
// and the dataset read from files.

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "data/csv_examples.hpp"
#include "data/csv_records.hpp"
#include "data/dataset.hpp"
#include "data/masked_lm.hpp"
#include "support/params_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

const std::string kBertVocab =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\nwe\n##ll\n";

std::vector<data::SampleField> bert_fields(std::int64_t length, std::int64_t predictions) {
  return {{"input_ids", true, length, 12},
          {"attention_mask", true, length, 2},
          {"token_type_ids", true, length, 2},
          {"masked_lm_positions", true, predictions, length},
          {"masked_lm_labels", true, predictions, 12},
          {"masked_lm_weights", false, predictions, 0},
          {"next_sentence_label", true, 1, 2}};
}

data::DataloaderSpec bert_loader(const test::TempDir& dir, const std::string& extra = "") {
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CSX\n    model: {name: bert, vocab_size: 12}\n"
      "    loop: {max_steps: 1}\n  fit:\n    train_dataloader: {data_processor: "
      "BertCSVDynamicMaskDataProcessor, batch_size: 2, data_dir: '" +
      dir.path().string() + "', vocab_file: '" + dir.path().string() + "/vocab.txt'" + extra +
      "}\n");
  config::Diagnostics diagnostics;
  data::DataloaderContext context{data::LoaderRole::train, 1, false, {}};
  auto spec = data::check_dataloader(loaded.trainer().fit->train_dataloader, context, diagnostics);
  REQUIRE(spec);
  return *spec;
}

void write_corpus(const test::TempDir& dir, const std::string& rows, int count) {
  dir.write("vocab.txt", kBertVocab);
  dir.write("meta.dat", "part-0.csv " + std::to_string(count) + "\n");
  dir.write("part-0.csv", "tokens,segment_ids,is_random_next\n" + rows);
}

// Opens the dataset and reads every example, as training does: a record's errors come when it is
// read.
void read_all(const data::DataloaderSpec& loader, const std::vector<data::SampleField>& fields) {
  auto dataset = data::open_dataset(loader, fields, 1);
  data::BatchData batch(fields, 1);
  for (std::int64_t index = 0; index < dataset->size(); ++index)
    dataset->read(index, 0, 0, batch);
}

const std::string kRows =
    "\"['[CLS]', 'the', 'cat', '[SEP]', 'sat', 'on', 'the', 'mat', '[SEP]']\","
    "\"[0, 0, 0, 0, 1, 1, 1, 1, 1]\",0\n"
    "\"['[CLS]', 'we', '##ll', '[SEP]', 'dog', '[SEP]']\",\"[0, 0, 0, 0, 1, 1]\",1\n";

}  // namespace

TEST_CASE("CSV records: quoted commas, doubled quotes, line breaks, and errors with the line") {
  auto records =
      data::parse_csv("a,b\n\"x, y\",\"say \"\"hi\"\"\"\n\"two\nlines\",z\r\n\n", "f.csv");
  REQUIRE(records.size() == 3);
  CHECK(records[1].fields == std::vector<std::string>{"x, y", "say \"hi\""});
  CHECK(records[2].fields == std::vector<std::string>{"two\nlines", "z"});
  CHECK(records[2].line == 3);
  // A line of "" is a record of one empty field, not a blank line.
  records = data::parse_csv("a\n\n\"\"\n", "f.csv");
  REQUIRE(records.size() == 2);
  CHECK(records[1].fields == std::vector<std::string>{""});
  CHECK(records[1].line == 3);
  CHECK_THROWS_WITH(data::parse_csv("a\n\"open,\n", "f.csv"),
                    "f.csv line 2: a quoted field never closes");
  CHECK_THROWS_WITH(data::parse_csv("\"a\"b\n", "f.csv"),
                    Catch::Contains("f.csv line 1: text follows"));
}

TEST_CASE("CSV examples are read one record at a time, where parse_csv finds the records") {
  // Quoted line breaks and doubled quotes, blank lines, CRLF, records past meta.dat's count, a
  // last record without a line break, and a second file.
  test::TempDir dir;
  dir.write("meta.dat", "a.csv 3\nb.csv 1\n");
  dir.write("a.csv", "x,y\r\n\r\n\"one\ntwo\",1\r\n\n\"say \"\"hi\"\"\",2\n3,3\n\"never read\n");
  dir.write("b.csv", "x,y\nlast,5");
  data::DataloaderSpec loader;
  loader.data_dirs = {dir.path().string()};
  data::CsvExamples examples(loader);
  REQUIRE(examples.size() == 4);
  REQUIRE(examples.files().size() == 2);
  CHECK(examples.files()[0].header == std::vector<std::string>{"x", "y"});
  struct Expected {
    std::size_t file;
    std::int64_t line;
    std::vector<std::string> fields;
  };
  const Expected expected[] = {{0, 3, {"one\ntwo", "1"}},
                               {0, 6, {"say \"hi\"", "2"}},
                               {0, 7, {"3", "3"}},
                               {1, 2, {"last", "5"}}};
  for (std::int64_t index : {3, 1, 0, 2}) {
    INFO(index);
    data::CsvExamples::Example example = examples.read(index);
    const Expected& want = expected[index];
    CHECK(example.file == want.file);
    CHECK(example.record.line == want.line);
    CHECK(example.record.fields == want.fields);
  }
  // The unclosed quote lies past the records meta.dat counts; counting one more reaches it.
  dir.write("meta.dat", "a.csv 4\n");
  CHECK_THROWS_WITH(data::CsvExamples(loader),
                    Catch::EndsWith("a.csv line 8: a quoted field never closes"));
  dir.write("meta.dat", "b.csv 2\n");
  CHECK_THROWS_WITH(data::CsvExamples(loader),
                    Catch::EndsWith("b.csv holds 1 examples but meta.dat lists 2"));
  // The fuzz target's finding: a header of "" was no record to parse_csv, but one to the scan.
  dir.write("b.csv", "\"\"\nx,5\n");
  dir.write("meta.dat", "b.csv 1\n");
  CHECK(data::CsvExamples(loader).files()[0].header == std::vector<std::string>{""});
  dir.write("b.csv", "");
  dir.write("meta.dat", "b.csv 0\n");
  CHECK_THROWS_WITH(data::CsvExamples(loader),
                    Catch::EndsWith("b.csv is empty: expected a header line"));
}

TEST_CASE("list literals of tokens and segment ids") {
  CHECK(data::parse_string_list("['[CLS]', \"don't\", 'a\\'b', ',']") ==
        std::vector<std::string>{"[CLS]", "don't", "a'b", ","});
  CHECK(data::parse_string_list("[]").empty());
  CHECK(data::parse_integer_list("[0, 0, 1]") == std::vector<std::int64_t>{0, 0, 1});
  CHECK_THROWS_AS(data::parse_string_list("['a', b]"), std::invalid_argument);
  CHECK_THROWS_AS(data::parse_string_list("['a'"), std::invalid_argument);
  CHECK_THROWS_AS(data::parse_integer_list("[0, x]"), std::invalid_argument);
}

TEST_CASE("masking: the share of tokens, never excluded ones, 80 % [MASK], a function of the key") {
  data::MaskingRules rules;
  rules.max_predictions = 20;
  rules.mask_id = 4;
  rules.excluded = {true, false, true, true, true, false, false, false, false, false, false, false};
  rules.replacements = {1, 5, 6, 7, 8, 9, 10, 11};
  std::vector<std::int32_t> ids = {2, 5, 6, 7, 8, 5, 9, 3, 10, 6, 7, 8, 9, 5, 6, 7, 8, 9, 10, 3};
  std::int64_t masked = 0, predictions = 0;
  for (std::uint64_t key = 0; key < 2000; ++key) {
    data::MaskedSequence m = data::mask_tokens(ids, rules, key);
    REQUIRE(m.positions.size() == 20);
    auto count = static_cast<std::int64_t>(std::count(m.weights.begin(), m.weights.end(), 1.0f));
    CHECK(count == 3);  // round(20 * 0.15)
    CHECK(std::is_sorted(m.positions.begin(), m.positions.begin() + count));
    for (std::int64_t i = 0; i < count; ++i) {
      auto at = static_cast<std::size_t>(m.positions[static_cast<std::size_t>(i)]);
      CHECK(m.labels[static_cast<std::size_t>(i)] == ids[at]);
      CHECK(!rules.excluded[static_cast<std::size_t>(ids[at])]);
      masked += m.input_ids[at] == 4;
      ++predictions;
    }
    CHECK(m.positions[static_cast<std::size_t>(count)] == 0);
  }
  CHECK(static_cast<double>(masked) / static_cast<double>(predictions) == Approx(0.8).margin(0.03));
  CHECK(data::mask_tokens(ids, rules, 7).input_ids == data::mask_tokens(ids, rules, 7).input_ids);
}

TEST_CASE("whole-word masking masks a word with its ## pieces") {
  data::MaskingRules rules;
  rules.max_predictions = 4;
  rules.masked_lm_prob = 0.5;
  rules.whole_word = true;
  rules.continues_word = {false, false, true};
  std::vector<std::int32_t> ids = {1, 2, 2, 1};  // word = 1 ##2 ##2, then 1
  for (std::uint64_t key = 0; key < 50; ++key) {
    data::MaskedSequence m = data::mask_tokens(ids, rules, key);
    auto count = std::count(m.weights.begin(), m.weights.end(), 1.0f);
    bool word = std::find(m.positions.begin(), m.positions.begin() + count, 1) !=
                m.positions.begin() + count;
    if (word)
      CHECK(std::vector<std::int32_t>(m.positions.begin(), m.positions.begin() + 3) ==
            std::vector<std::int32_t>{0, 1, 2});
  }
}

TEST_CASE("the BERT CSV dataset: tokens through the vocabulary, segments, NSP labels, masks") {
  test::TempDir dir;
  write_corpus(dir, kRows, 2);
  auto fields = bert_fields(10, 3);
  auto dataset = data::open_dataset(bert_loader(dir), fields, 1);
  REQUIRE(dataset->size() == 2);
  data::BatchData batch(fields, 2);
  dataset->read(1, 0, 1, batch);
  const auto& ids = batch.integers[0];
  std::vector<std::int32_t> row(ids.begin() + 10, ids.end());
  std::vector<std::int32_t> expected = {2, 10, 11, 3, 1, 3, 0, 0, 0, 0};  // 'dog' is [UNK]
  auto masked = std::count(batch.floats[5].begin() + 3, batch.floats[5].end(), 1.0f);
  CHECK(masked == 1);  // round(6 * 0.15)
  auto position = static_cast<std::size_t>(batch.integers[3][3]);
  CHECK(batch.integers[4][3] == expected[position]);
  expected[position] = row[position];
  CHECK(row == expected);
  CHECK(std::vector<std::int32_t>(batch.integers[1].begin() + 10, batch.integers[1].end()) ==
        std::vector<std::int32_t>{1, 1, 1, 1, 1, 1, 0, 0, 0, 0});
  CHECK(std::vector<std::int32_t>(batch.integers[2].begin() + 10, batch.integers[2].end()) ==
        std::vector<std::int32_t>{0, 0, 0, 0, 1, 1, 0, 0, 0, 0});
  CHECK(batch.integers[6][1] == 1);

  // The masks depend on the epoch, and only on it.
  data::BatchData again(fields, 2), later(fields, 2);
  bool differs = false;
  for (std::int64_t epoch = 1; epoch < 20 && !differs; ++epoch) {
    dataset->read(0, 0, 0, again);
    dataset->read(0, epoch, 0, later);
    differs = again.integers[3] != later.integers[3];
  }
  CHECK(differs);
  data::BatchData first(fields, 2);
  dataset->read(0, 0, 0, first);
  CHECK(first.integers == again.integers);
}

TEST_CASE("BERT CSV errors name the file, the line and what is wrong") {
  test::TempDir dir;
  auto fields = bert_fields(6, 2);
  write_corpus(dir, kRows, 2);
  CHECK_THROWS_WITH(
      read_all(bert_loader(dir), fields),
      Catch::Contains("part-0.csv line 2: 9 tokens, more than max_sequence_length 6"));
  fields = bert_fields(10, 2);
  write_corpus(dir, kRows, 3);
  CHECK_THROWS_WITH(data::open_dataset(bert_loader(dir), fields, 1),
                    Catch::Contains("part-0.csv holds 2 examples but meta.dat lists 3"));
  write_corpus(dir, "\"['[CLS]', 'the'\",\"[0, 0]\",0\n", 1);
  CHECK_THROWS_WITH(read_all(bert_loader(dir), fields),
                    Catch::Contains("part-0.csv line 2: expected ',' or ']' at offset 15"));
  write_corpus(dir, kRows + "\"['[CLS]', 'the']\",\"[0, 2]\",0\n", 3);
  CHECK_THROWS_WITH(read_all(bert_loader(dir), fields),
                    Catch::Contains("part-0.csv line 4: segment id 2 (segment ids are 0 or 1)"));
  write_corpus(dir, kRows + "\"['[CLS]', 'the'],\"[0, 0]\",0\n", 3);
  CHECK_THROWS_WITH(data::open_dataset(bert_loader(dir), fields, 1),
                    Catch::Contains("part-0.csv line 4: a quoted field never closes"));
  write_corpus(dir, kRows, 2);
  dir.write("vocab.txt", "[PAD]\n[CLS]\n");
  CHECK_THROWS_WITH(data::open_dataset(bert_loader(dir), fields, 1),
                    Catch::Contains("has no oov_token '[UNK]'"));
  dir.write("vocab.txt", kBertVocab + "extra\n");
  CHECK_THROWS_WITH(data::open_dataset(bert_loader(dir), fields, 1),
                    Catch::Contains("holds 13 tokens but the model's vocab_size is 12"));
}

TEST_CASE("pre-masked BERT CSV (BertCSVDataProcessor): every field as written, checked") {
  test::TempDir dir;
  dir.write("meta.dat", "part-0.csv 1\n");
  std::string header =
      "input_ids,attention_mask,token_type_ids,masked_lm_positions,labels,masked_lm_weights,"
      "next_sentence_label\n";
  dir.write("part-0.csv", header +
                              "\"[2, 4, 6, 3]\",\"[1, 1, 1, 0]\",\"[0, 0, 1, 1]\",\"[1, 1]\","
                              "\"[5, 5]\",\"[1, 0]\",1\n");
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CSX\n    model: {name: bert, vocab_size: 12}\n"
      "    loop: {max_steps: 1}\n  fit:\n    train_dataloader: {data_processor: "
      "BertCSVDataProcessor, batch_size: 1, data_dir: '" +
      dir.path().string() + "'}\n");
  config::Diagnostics diagnostics;
  data::DataloaderContext context{data::LoaderRole::train, 1, false, {}};
  auto spec = data::check_dataloader(loaded.trainer().fit->train_dataloader, context, diagnostics);
  REQUIRE(spec);
  auto fields = bert_fields(4, 2);
  auto dataset = data::open_dataset(*spec, fields, 1);
  REQUIRE(dataset->size() == 1);
  data::BatchData batch(fields, 1);
  dataset->read(0, 3, 0, batch);
  CHECK(batch.integers[0] == std::vector<std::int32_t>{2, 4, 6, 3});
  CHECK(batch.integers[1] == std::vector<std::int32_t>{1, 1, 1, 0});
  CHECK(batch.integers[2] == std::vector<std::int32_t>{0, 0, 1, 1});
  CHECK(batch.integers[3] == std::vector<std::int32_t>{1, 1});
  CHECK(batch.integers[4] == std::vector<std::int32_t>{5, 5});
  CHECK(batch.floats[5] == std::vector<float>{1.0f, 0.0f});
  CHECK(batch.integers[6] == std::vector<std::int32_t>{1});

  dir.write("part-0.csv", header +
                              "\"[2, 4, 6]\",\"[1, 1, 1, 0]\",\"[0, 0, 1, 1]\",\"[1, 1]\","
                              "\"[5, 5]\",\"[1, 0]\",1\n");
  CHECK_THROWS_WITH(
      read_all(*spec, fields),
      Catch::Contains("part-0.csv line 2: input_ids holds 3 values; the model reads 4"));
  dir.write("part-0.csv", header +
                              "\"[2, 4, 6, 30]\",\"[1, 1, 1, 0]\",\"[0, 0, 1, 1]\",\"[1, 1]\","
                              "\"[5, 5]\",\"[1, 0]\",1\n");
  CHECK_THROWS_WITH(read_all(*spec, fields),
                    Catch::Contains("input_ids holds 30, outside [0, 12)"));
  dir.write("part-0.csv", "input_ids\n\"[1, 2, 3, 4]\"\n");
  CHECK_THROWS_WITH(data::open_dataset(*spec, fields, 1),
                    Catch::Contains("line 1: the header has no column 'attention_mask'"));
}

TEST_CASE("BERT CSV keys csrun cannot honour are reported at validation") {
  test::TempDir dir;
  write_corpus(dir, kRows, 2);
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CSX\n    model: {name: bert, vocab_size: 12}\n"
      "    loop: {max_steps: 1}\n  fit:\n    train_dataloader: {data_processor: "
      "BertCSVDynamicMaskDataProcessor, batch_size: 2, data_dir: '" +
      dir.path().string() + "', vocab_file: '" + dir.path().string() +
      "/vocab.txt', gather_mlm_labels: false, dynamic_mlm_scale: true}\n");
  config::Diagnostics diagnostics;
  data::DataloaderContext context{data::LoaderRole::train, 1, false, {}};
  data::check_dataloader(loaded.trainer().fit->train_dataloader, context, diagnostics);
  bool gather_error = false;
  bool scale_finding = false;  // dynamic_mlm_scale takes effect (the model's loss reads it)
  for (const config::Diagnostic& d : diagnostics.all()) {
    if (d.severity == config::Severity::error &&
        d.message.find("gather_mlm_labels: false is not supported") != std::string::npos)
      gather_error = true;
    if (d.message.find("dynamic_mlm_scale") != std::string::npos) scale_finding = true;
  }
  CHECK(gather_error);
  CHECK_FALSE(scale_finding);
}

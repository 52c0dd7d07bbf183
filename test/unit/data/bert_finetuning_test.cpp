// The fine-tuning heads' datasets: SST-2 and MNLI TSV files tokenized with WordPiece, NER CSV files
// with a JSON label vocabulary, BertSum CSV files; each read from files into the model's batch.

#include <catch2/catch.hpp>

#include "checked_loader.hpp"
#include "data/dataset.hpp"
#include "data/wordpiece.hpp"
#include "support/params_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

const std::string kWordPieceVocab =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\nplay\n##ing\n,\n.\n";

}  // namespace

TEST_CASE("WordPiece: punctuation apart, lower case, the longest piece first, [UNK] otherwise") {
  test::TempDir dir;
  data::Vocabulary vocab(dir.write("vocab.txt", kWordPieceVocab), true, "[UNK]");
  data::WordPieceTokenizer tokenizer(vocab, true, "[unk]");
  CHECK(tokenizer.tokens("The cat, PLAYING.") ==
        std::vector<std::string>{"the", "cat", ",", "play", "##ing", "."});
  CHECK(tokenizer.tokens("dogs sat") == std::vector<std::string>{"[unk]", "sat"});
}

TEST_CASE("SST-2 TSV files: [CLS] sentence [SEP] and its label, dev.tsv for evaluation") {
  test::TempDir dir;
  dir.write("vocab.txt", kWordPieceVocab);
  dir.write("train.tsv", "sentence\tlabel\nthe cat sat\t1\nplaying on the mat .\t0\n");
  dir.write("dev.tsv", "sentence\tlabel\nthe mat\t0\n");
  std::string loader = "{data_processor: SST2DataProcessor, batch_size: 2, data_dir: '" +
                       dir.path().string() + "', vocab_file: '" + dir.path().string() +
                       "/vocab.txt', max_sequence_length: 6}";
  std::vector<data::SampleField> fields = {{"input_ids", true, 6, 14},
                                           {"attention_mask", true, 6, 2},
                                           {"token_type_ids", true, 6, 2},
                                           {"labels", true, 1, 2}};
  auto train =
      data::open_dataset(test::checked_loader("{name: bert/classifier}", loader), fields, 1);
  REQUIRE(train->size() == 2);
  data::BatchData batch(fields, 2);
  train->read(0, 0, 0, batch);
  train->read(1, 0, 1, batch);
  CHECK(test::row_of(batch, 0, 0, 6) == std::vector<std::int32_t>{2, 5, 6, 7, 3, 0});
  // Cut to MSL - 2 tokens: "playing on the mat ." loses its end.
  CHECK(test::row_of(batch, 0, 1, 6) == std::vector<std::int32_t>{2, 10, 11, 8, 5, 3});
  CHECK(test::row_of(batch, 1, 0, 6) == std::vector<std::int32_t>{1, 1, 1, 1, 1, 0});
  CHECK(batch.integers[3] == std::vector<std::int32_t>{1, 0});
  auto eval = data::open_dataset(
      test::checked_loader("{name: bert/classifier}", loader, data::LoaderRole::eval), fields, 1);
  CHECK(eval->size() == 1);
}

TEST_CASE(
    "MNLI TSV files: sentence pairs, their labels, and an unknown label named with its line") {
  test::TempDir dir;
  dir.write("vocab.txt", kWordPieceVocab);
  dir.write("train.tsv",
            "sentence1\tsentence2\tgold_label\nthe cat sat\ton the mat\tneutral\n"
            "the cat\tthe mat\tmaybe\n");
  std::string loader = "{data_processor: MNLIDataProcessor, batch_size: 1, data_dir: '" +
                       dir.path().string() + "', vocab_file: '" + dir.path().string() +
                       "/vocab.txt', max_sequence_length: 8}";
  std::vector<data::SampleField> fields = {{"input_ids", true, 8, 14},
                                           {"attention_mask", true, 8, 2},
                                           {"token_type_ids", true, 8, 2},
                                           {"labels", true, 1, 3}};
  try {
    data::open_dataset(test::checked_loader("{name: bert/classifier, num_labels: 3}", loader),
                       fields, 1);
    FAIL("no error");
  } catch (const std::runtime_error& error) {
    CHECK(std::string(error.what()).find("train.tsv line 3: gold_label 'maybe'") !=
          std::string::npos);
  }
  dir.write("train.tsv", "sentence1\tsentence2\tgold_label\nthe cat sat\ton the mat\tneutral\n");
  auto pairs = data::open_dataset(
      test::checked_loader("{name: bert/classifier, num_labels: 3}", loader), fields, 1);
  data::BatchData batch(fields, 1);
  pairs->read(0, 0, 0, batch);
  // 3 + 3 tokens fit 8 - 3 only after the longer side (the second, on a tie) loses one.
  CHECK(test::row_of(batch, 0, 0, 8) == std::vector<std::int32_t>{2, 5, 6, 7, 3, 8, 5, 3});
  // The Model Zoo's segment ids: positions len(a) .. len(a) + len(b) - 1.
  CHECK(test::row_of(batch, 2, 0, 8) == std::vector<std::int32_t>{0, 0, 0, 1, 1, 0, 0, 0});
  CHECK(batch.integers[3] == std::vector<std::int32_t>{1});
}

TEST_CASE(
    "MNLI evaluation: dev_matched.tsv then dev_mismatched.tsv, each sample marked with its "
    "set") {
  test::TempDir dir;
  dir.write("vocab.txt", kWordPieceVocab);
  std::string header = "sentence1\tsentence2\tgold_label\n";
  dir.write("dev_matched.tsv", header + "the cat\tthe mat\tentailment\n");
  dir.write("dev_mismatched.tsv", header + "the mat\tthe cat\tcontradiction\n");
  dir.write("train.tsv", header + "the cat\tthe mat\tneutral\n");
  data::DataloaderSpec loader = test::checked_loader(
      "{name: bert/classifier, num_labels: 3}",
      "{data_processor: MNLIDataProcessor, batch_size: 2, data_dir: '" + dir.path().string() +
          "', vocab_file: '" + dir.path().string() + "/vocab.txt', max_sequence_length: 8}",
      data::LoaderRole::eval);
  CHECK(data::has_matched_partitions(loader));
  std::vector<data::SampleField> fields = {
      {"input_ids", true, 8, 14}, {"attention_mask", true, 8, 2}, {"token_type_ids", true, 8, 2},
      {"labels", true, 1, 3},     {"is_matched", true, 1, 2},     {"is_mismatched", true, 1, 2}};
  auto samples = data::open_dataset(loader, fields, 1);
  REQUIRE(samples->size() == 2);
  data::BatchData batch(fields, 2);
  samples->read(0, 0, 0, batch);
  samples->read(1, 0, 1, batch);
  CHECK(batch.integers[3] == std::vector<std::int32_t>{0, 2});
  CHECK(batch.integers[4] == std::vector<std::int32_t>{1, 0});
  CHECK(batch.integers[5] == std::vector<std::int32_t>{0, 1});
  CHECK_FALSE(data::has_matched_partitions(test::checked_loader(
      "{name: bert/classifier, num_labels: 3}",
      "{data_processor: MNLIDataProcessor, batch_size: 2, data_dir: '" + dir.path().string() +
          "', vocab_file: '" + dir.path().string() + "/vocab.txt', max_sequence_length: 8}")));
}

TEST_CASE("NER CSV files: tokens through the vocabulary, labels through label2id.json") {
  test::TempDir dir;
  dir.write("vocab.txt", kWordPieceVocab);
  dir.write("label2id.json", R"({"[PAD]": 0, "B": 1, "I": 2, "O": 3, "[CLS]": 5, "[SEP]": 6})");
  dir.write("meta.dat", "part-0.csv 1\n");
  dir.write("part-0.csv", "tokens,labels\n[CLS] the cat sat [SEP],[CLS] O B I [SEP]\n");
  std::string loader =
      "{data_processor: BertTokenClassifierDataProcessor, batch_size: 1, "
      "data_dir: '" +
      dir.path().string() + "', vocab_file: '" + dir.path().string() +
      "/vocab.txt', label_vocab_file: '" + dir.path().string() +
      "/label2id.json', max_sequence_length: 6}";
  std::vector<data::SampleField> fields = {{"input_ids", true, 6, 14},
                                           {"attention_mask", true, 6, 2},
                                           {"token_type_ids", true, 6, 2},
                                           {"labels", true, 6, 7},
                                           {"loss_mask", true, 6, 2}};
  auto ner = data::open_dataset(
      test::checked_loader("{name: bert/token_classifier, num_classes: 7}", loader), fields, 1);
  data::BatchData batch(fields, 1);
  ner->read(0, 0, 0, batch);
  CHECK(test::row_of(batch, 0, 0, 6) == std::vector<std::int32_t>{2, 5, 6, 7, 3, 0});
  CHECK(test::row_of(batch, 3, 0, 6) == std::vector<std::int32_t>{5, 3, 1, 2, 6, 0});
  CHECK(test::row_of(batch, 4, 0, 6) == std::vector<std::int32_t>{1, 1, 1, 1, 1, 0});
  dir.write("part-0.csv", "tokens,labels\n[CLS] the cat [SEP],[CLS] O Q [SEP]\n");
  CHECK_THROWS_WITH(
      data::open_dataset(
          test::checked_loader("{name: bert/token_classifier, num_classes: 7}", loader), fields, 1),
      Catch::Contains("part-0.csv line 2: the label 'Q' is not in label_vocab_file"));
}

TEST_CASE(
    "BertSum CSV files: ids, labels, segments and [CLS] positions, weighted as the Model Zoo "
    "weighs them") {
  test::TempDir dir;
  dir.write("meta.dat", "part-0.csv 1\n");
  dir.write("part-0.csv",
            "input_token_ids,labels,segment_ids,cls_ids\n"
            "\"[2, 5, 3, 2, 6, 3]\",\"[0, 1]\",\"[0, 0, 0, 1, 1, 1]\",\"[0, 3]\"\n");
  std::string loader = "{data_processor: BertSumCSVDataProcessor, batch_size: 1, data_dir: '" +
                       dir.path().string() + "', max_sequence_length: 8, max_cls_tokens: 3}";
  std::vector<data::SampleField> fields = {
      {"input_ids", true, 8, 14}, {"attention_mask", true, 8, 2}, {"token_type_ids", true, 8, 2},
      {"labels", true, 3, 2},     {"cls_indices", true, 3, 8},    {"cls_weights", false, 3, 0}};
  auto summaries = data::open_dataset(
      test::checked_loader("{name: bert/extractive_summarization}", loader), fields, 1);
  data::BatchData batch(fields, 1);
  summaries->read(0, 0, 0, batch);
  CHECK(test::row_of(batch, 0, 0, 8) == std::vector<std::int32_t>{2, 5, 3, 2, 6, 3, 0, 0});
  CHECK(test::row_of(batch, 1, 0, 8) == std::vector<std::int32_t>{1, 1, 1, 1, 1, 1, 0, 0});
  CHECK(test::row_of(batch, 4, 0, 3) == std::vector<std::int32_t>{0, 3, 0});
  // cls_indices != 0, as the Model Zoo computes them: its first sentence never counts.
  CHECK(batch.floats[5] == std::vector<float>{0.0f, 1.0f, 0.0f});
}

// The encoder-decoder networks' text: T5DynamicDataProcessor's documents corrupted into spans and
// sentinels (anew each epoch) and TransformerDynamicDataProcessor's sentence pairs, each read
// from files into the model's batch; and the errors that name the file.

#include <catch2/catch.hpp>

#include <set>

#include "checked_loader.hpp"
#include "data/dataset.hpp"
#include "support/params_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

// Ids 0-3 are the special tokens, 4-13 the words w0..w9.
const std::string kTextVocab = "<pad>\n<unk>\n<s>\n</s>\nw0\nw1\nw2\nw3\nw4\nw5\nw6\nw7\nw8\nw9\n";

std::vector<data::SampleField> seq2seq_fields(std::int64_t source, std::int64_t target,
                                              std::int64_t vocab) {
  return {{"input_ids", true, source, vocab},
          {"attention_mask", true, source, 2},
          {"decoder_input_ids", true, target, vocab},
          {"decoder_attention_mask", true, target, 2},
          {"labels", true, target, vocab}};
}

std::int64_t kept(const std::vector<std::int32_t>& mask) {
  return std::count(mask.begin(), mask.end(), 1);
}

}  // namespace

TEST_CASE("T5 text: each piece's spans become sentinels, the target holds them, anew each epoch") {
  test::TempDir dir;
  std::string vocab = dir.write("vocab.txt", kTextVocab);
  std::string document;
  for (int i = 0; i < 80; ++i)
    document += "w" + std::to_string(i % 10) + " ";
  dir.write("train/part-0.txt", document + "\n\nw1 w2 w3\n");
  dir.write("train/meta.dat", "part-0.txt 3\n");
  std::string loader = "{data_processor: T5DynamicDataProcessor, batch_size: 1, src_vocab_file: '" +
                       vocab + "', src_data_dir: '" + dir.path().string() +
                       "/train', extra_ids: 4, src_max_sequence_length: 32, "
                       "tgt_max_sequence_length: 12}";
  auto fields = seq2seq_fields(32, 12, 18);
  auto dataset = data::open_dataset(
      test::checked_loader("{name: t5, src_vocab_size: 14, extra_ids: 4}", loader), fields, 7);
  // Pieces of 35 tokens (5 in 2 spans: 32 inputs after corruption, 8 targets): the 80 of the
  // first document as 35 + 35 + 10, then "w1 w2 w3".
  REQUIRE(dataset->size() == 4);
  for (std::int64_t index = 0; index < dataset->size(); ++index) {
    data::BatchData batch(fields, 1);
    dataset->read(index, 0, 0, batch);
    std::vector<std::int32_t> source = test::row_of(batch, 0, 0, 32);
    std::vector<std::int32_t> decoder = test::row_of(batch, 2, 0, 12);
    std::vector<std::int32_t> labels = test::row_of(batch, 4, 0, 12);
    std::int64_t inputs = kept(test::row_of(batch, 1, 0, 32));
    std::int64_t targets = kept(test::row_of(batch, 3, 0, 12));
    INFO("piece " << index);
    // The decoder reads <s> and the labels shifted right; the labels end with </s>.
    CHECK(decoder[0] == 2);
    CHECK(labels[static_cast<std::size_t>(targets - 1)] == 3);
    for (std::int64_t i = 1; i < targets; ++i)
      CHECK(decoder[static_cast<std::size_t>(i)] == labels[static_cast<std::size_t>(i - 1)]);
    // Sentinels count down from the last id (17), in order, in both; putting the spans back
    // where their sentinels stand restores the piece.
    std::vector<std::int32_t> restored;
    std::int32_t sentinel = 17;
    std::size_t at = 0;
    for (std::int64_t i = 0; i < inputs; ++i) {
      std::int32_t id = source[static_cast<std::size_t>(i)];
      if (id < 14) {
        restored.push_back(id);
        continue;
      }
      CHECK(id == sentinel);
      REQUIRE(labels[at] == sentinel);
      for (++at; labels[at] < 14 && labels[at] != 3; ++at)
        restored.push_back(labels[at]);
      --sentinel;
    }
    CHECK(sentinel < 17);
    if (inputs < 32) CHECK(source[static_cast<std::size_t>(inputs)] == 0);  // <pad>
    std::int64_t length = index < 2 ? 35 : index == 2 ? 10 : 3;
    REQUIRE(static_cast<std::int64_t>(restored.size()) == length);
    for (std::int64_t i = 0; i < length; ++i) {
      std::int64_t word = index == 3 ? i + 1 : (index * 35 + i) % 10;
      CHECK(restored[static_cast<std::size_t>(i)] == 4 + word);
    }
  }
  // The spans of a piece are drawn anew each epoch, the same in every run.
  std::set<std::vector<std::int32_t>> sources;
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    data::BatchData batch(fields, 1);
    dataset->read(0, epoch, 0, batch);
    sources.insert(test::row_of(batch, 0, 0, 32));
  }
  CHECK(sources.size() > 1);
  data::BatchData again(fields, 1), first(fields, 1);
  dataset->read(0, 0, 0, first);
  data::open_dataset(test::checked_loader("{name: t5, src_vocab_size: 14, extra_ids: 4}", loader),
                     fields, 7)
      ->read(0, 0, 0, again);
  CHECK(again.integers == first.integers);
}

TEST_CASE("Transformer text: sentence pairs that fit, <s> before and </s> after the target") {
  test::TempDir dir;
  std::string vocab = dir.write("vocab.txt", kTextVocab);
  dir.write("data/en.txt", "w1 w2 w3\nw4 w5 w6 w7 w8 w9 w0 w1\n\nw9 oov\n");
  dir.write("data/de.txt", "w3 w2 w1\nw1\nw1\nw7\n");
  dir.write("data/meta.dat", "en.txt de.txt 4\n");
  std::string loader =
      "{data_processor: TransformerDynamicDataProcessor, batch_size: 2, src_vocab_file: '" + vocab +
      "', src_data_dir: '" + dir.path().string() +
      "/data', src_max_sequence_length: 6, tgt_max_sequence_length: 5}";
  auto fields = seq2seq_fields(6, 5, 14);
  auto dataset = data::open_dataset(
      test::checked_loader("{name: transformer, src_vocab_size: 14, tgt_vocab_size: 14}", loader),
      fields, 1);
  // The second pair's source is too long, the third's is empty: both are left out.
  REQUIRE(dataset->size() == 2);
  data::BatchData batch(fields, 2);
  dataset->read(0, 0, 0, batch);
  dataset->read(1, 0, 1, batch);
  CHECK(test::row_of(batch, 0, 0, 6) == std::vector<std::int32_t>{5, 6, 7, 0, 0, 0});
  CHECK(test::row_of(batch, 1, 0, 6) == std::vector<std::int32_t>{1, 1, 1, 0, 0, 0});
  CHECK(test::row_of(batch, 2, 0, 5) == std::vector<std::int32_t>{2, 7, 6, 5, 0});
  CHECK(test::row_of(batch, 3, 0, 5) == std::vector<std::int32_t>{1, 1, 1, 1, 0});
  CHECK(test::row_of(batch, 4, 0, 5) == std::vector<std::int32_t>{7, 6, 5, 3, 0});
  // An unknown word reads as <unk>.
  CHECK(test::row_of(batch, 0, 1, 6) == std::vector<std::int32_t>{13, 1, 0, 0, 0, 0});
  CHECK(test::row_of(batch, 4, 1, 5) == std::vector<std::int32_t>{11, 3, 0, 0, 0});
}

TEST_CASE("seq2seq text: what is wrong names the file") {
  test::TempDir dir;
  std::string vocab = dir.write("vocab.txt", kTextVocab);
  dir.write("pairs/en.txt", "w1 w2\nw3\n");
  dir.write("pairs/de.txt", "w1\n");
  dir.write("pairs/meta.dat", "en.txt de.txt 2\n");
  auto transformer = [&](const std::string& directory) {
    return "{data_processor: TransformerDynamicDataProcessor, batch_size: 1, src_vocab_file: '" +
           vocab + "', src_data_dir: '" + directory +
           "', src_max_sequence_length: 6, tgt_max_sequence_length: 5}";
  };
  std::string model = "{name: transformer, src_vocab_size: 14, tgt_vocab_size: 14}";
  auto fields = seq2seq_fields(6, 5, 14);
  CHECK_THROWS_WITH(
      data::open_dataset(test::checked_loader(model, transformer(dir.path() / "pairs")), fields, 1),
      Catch::Contains("en.txt holds 2 lines but") && Catch::Contains("de.txt holds 1"));
  dir.write("bad/meta.dat", "en.txt 2\n");
  CHECK_THROWS_WITH(
      data::open_dataset(test::checked_loader(model, transformer(dir.path() / "bad")), fields, 1),
      Catch::Contains("meta.dat line 1: expected '<source file> <target file> <number of lines>'"));
  // A vocabulary with more ids than the model's embeddings.
  CHECK_THROWS_WITH(
      data::open_dataset(test::checked_loader(model, transformer(dir.path() / "pairs")),
                         seq2seq_fields(6, 5, 10), 1),
      Catch::Contains("holds 14 tokens") &&
          Catch::Contains("more than the model's vocabulary of 10"));
  // T5 without a <s> in the vocabulary.
  std::string plain = dir.write("plain.txt", "<pad>\n<unk>\nw0\n");
  dir.write("t5/part-0.txt", "w0 w0 w0\n");
  dir.write("t5/meta.dat", "part-0.txt 1\n");
  std::string t5 = "{data_processor: T5DynamicDataProcessor, batch_size: 1, src_vocab_file: '" +
                   plain + "', src_data_dir: '" + (dir.path() / "t5").string() +
                   "', src_max_sequence_length: 6, tgt_max_sequence_length: 5}";
  CHECK_THROWS_WITH(data::open_dataset(test::checked_loader("{name: t5, src_vocab_size: 3}", t5),
                                       seq2seq_fields(6, 5, 3), 1),
                    Catch::Contains("plain.txt") && Catch::Contains("sos_token"));
}

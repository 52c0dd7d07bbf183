// The fine-tuning heads' readers on arbitrary files: SST-2 and MNLI TSV files through WordPiece,
// NER CSV files with a JSON label vocabulary, BertSum CSV files. Every input writes the same five
// files, so what a reader finds in the directory is the input's alone; its last byte picks the
// processor.

#include <fuzzer/FuzzedDataProvider.h>

#include "dataset_reading.hpp"
#include "scratch_directory.hpp"

namespace {

constexpr std::int64_t kLength = 8;

// A fine-tuning head: its processor, the loader keys beyond the shared ones and the sample
// fields after the token rows.
struct Head {
  std::string processor;
  std::string keys;
  std::vector<csrun::data::SampleField> fields;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  auto choice = static_cast<std::size_t>(input.ConsumeIntegralInRange(0, 3));
  const csrun::fuzz::ScratchDirectory& directory = csrun::fuzz::scratch();
  std::string vocab = directory.write("vocab.txt", input.ConsumeRandomLengthString());
  directory.write("train.tsv", input.ConsumeRandomLengthString());
  directory.write("meta.dat", input.ConsumeRandomLengthString());
  directory.write("part-0.csv", input.ConsumeRandomLengthString());
  std::string labels = directory.write("label2id.json", input.ConsumeRemainingBytesAsString());
  std::string vocab_key = ", vocab_file: '" + vocab + "'";
  const Head heads[] = {
      {"SST2DataProcessor", vocab_key, {{"labels", true, 1, 2}}},
      {"MNLIDataProcessor", vocab_key, {{"labels", true, 1, 3}}},
      {"BertTokenClassifierDataProcessor",
       vocab_key + ", label_vocab_file: '" + labels + "'",
       {{"labels", true, kLength, 7}, {"loss_mask", true, kLength, 2}}},
      {"BertSumCSVDataProcessor",
       ", max_cls_tokens: 3",
       {{"labels", true, 3, 2}, {"cls_indices", true, 3, kLength}, {"cls_weights", false, 3, 0}}}};
  const Head& head = heads[choice];
  std::vector<csrun::data::SampleField> fields = {{"input_ids", true, kLength, 1000},
                                                  {"attention_mask", true, kLength, 2},
                                                  {"token_type_ids", true, kLength, 2}};
  fields.insert(fields.end(), head.fields.begin(), head.fields.end());
  csrun::fuzz::check_and_read(
      "{data_processor: " + head.processor + ", batch_size: 1, data_dir: '" + directory.path() +
          "', max_sequence_length: " + std::to_string(kLength) + head.keys + "}",
      fields);
  return 0;
}

// The fine-tuning heads' readers on arbitrary files: SST-2 and MNLI TSV files through WordPiece,
// NER CSV files with a JSON label vocabulary, BertSum CSV files. Every input writes the same five
// files, so what a reader finds in the directory is the input's alone; its last byte picks the
// processor.

#include <fuzzer/FuzzedDataProvider.h>

#include "dataset_reading.hpp"
#include "scratch_directory.hpp"

namespace {

constexpr std::int64_t kLength = 8;

std::vector<csrun::data::SampleField> text_fields() {
  return {{"input_ids", true, kLength, 1000},
          {"attention_mask", true, kLength, 2},
          {"token_type_ids", true, kLength, 2}};
}

std::vector<csrun::data::SampleField> with(std::vector<csrun::data::SampleField> fields,
                                           std::vector<csrun::data::SampleField> more) {
  fields.insert(fields.end(), more.begin(), more.end());
  return fields;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  int processor = input.ConsumeIntegralInRange(0, 3);
  const csrun::fuzz::ScratchDirectory& directory = csrun::fuzz::scratch();
  std::string vocab = directory.write("vocab.txt", input.ConsumeRandomLengthString());
  directory.write("train.tsv", input.ConsumeRandomLengthString());
  directory.write("meta.dat", input.ConsumeRandomLengthString());
  directory.write("part-0.csv", input.ConsumeRandomLengthString());
  std::string labels = directory.write("label2id.json", input.ConsumeRemainingBytesAsString());
  std::string common = "batch_size: 1, data_dir: '" + directory.path() + "', vocab_file: '" +
                       vocab + "', max_sequence_length: " + std::to_string(kLength);
  switch (processor) {
    case 0:
      csrun::fuzz::check_and_read("{data_processor: SST2DataProcessor, " + common + "}",
                                  with(text_fields(), {{"labels", true, 1, 2}}));
      break;
    case 1:
      csrun::fuzz::check_and_read("{data_processor: MNLIDataProcessor, " + common + "}",
                                  with(text_fields(), {{"labels", true, 1, 3}}));
      break;
    case 2:
      csrun::fuzz::check_and_read(
          "{data_processor: BertTokenClassifierDataProcessor, " + common + ", label_vocab_file: '" +
              labels + "'}",
          with(text_fields(), {{"labels", true, kLength, 7}, {"loss_mask", true, kLength, 2}}));
      break;
    default:
      csrun::fuzz::check_and_read(
          "{data_processor: BertSumCSVDataProcessor, batch_size: 1, data_dir: '" +
              directory.path() + "', max_sequence_length: " + std::to_string(kLength) +
              ", max_cls_tokens: 3}",
          with(text_fields(), {{"labels", true, 3, 2},
                               {"cls_indices", true, 3, kLength},
                               {"cls_weights", false, 3, 0}}));
  }
  return 0;
}

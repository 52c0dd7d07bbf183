// The BERT CSV reader (dynamic masking) on an arbitrary meta.dat, CSV file and vocabulary.

#include <fuzzer/FuzzedDataProvider.h>

#include "dataset_reading.hpp"
#include "scratch_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const csrun::fuzz::ScratchDirectory& directory = csrun::fuzz::scratch();
  directory.write("meta.dat", input.ConsumeRandomLengthString());
  directory.write("part-0.csv", input.ConsumeRandomLengthString());
  std::string vocab = directory.write("vocab.txt", input.ConsumeRemainingBytesAsString());
  constexpr std::int64_t kLength = 16;
  constexpr std::int64_t kPredictions = 4;
  csrun::fuzz::check_and_read(
      "{data_processor: BertCSVDynamicMaskDataProcessor, batch_size: 1, data_dir: '" +
          directory.path() + "', vocab_file: '" + vocab +
          "', max_sequence_length: " + std::to_string(kLength) +
          ", max_predictions_per_seq: " + std::to_string(kPredictions) + "}",
      {{"input_ids", true, kLength, 1000},
       {"attention_mask", true, kLength, 2},
       {"token_type_ids", true, kLength, 2},
       {"masked_lm_positions", true, kPredictions, kLength},
       {"masked_lm_labels", true, kPredictions, 1000},
       {"masked_lm_weights", false, kPredictions, 0},
       {"next_sentence_label", true, 1, 2}});
  return 0;
}

// The encoder-decoder readers on arbitrary files: T5's documents corrupted into spans and
// sentinels, the Transformer's sentence pairs. Every input writes the same five files, so what a
// reader finds in the directory is the input's alone; its last byte picks the processor.

#include <fuzzer/FuzzedDataProvider.h>

#include "dataset_reading.hpp"
#include "scratch_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  bool t5 = input.ConsumeBool();
  const csrun::fuzz::ScratchDirectory& directory = csrun::fuzz::scratch();
  std::string vocab = directory.write("vocab.txt", input.ConsumeRandomLengthString());
  directory.write("meta.dat", input.ConsumeRandomLengthString());
  directory.write("part-0.txt", input.ConsumeRandomLengthString());
  directory.write("en.txt", input.ConsumeRandomLengthString());
  directory.write("de.txt", input.ConsumeRemainingBytesAsString());
  constexpr std::int64_t kSource = 16;
  constexpr std::int64_t kTarget = 8;
  std::string processor =
      t5 ? "T5DynamicDataProcessor, extra_ids: 4" : "TransformerDynamicDataProcessor";
  csrun::fuzz::check_and_read(
      "{data_processor: " + processor + ", batch_size: 1, src_vocab_file: '" + vocab +
          "', src_data_dir: '" + directory.path() + "', src_max_sequence_length: " +
          std::to_string(kSource) + ", tgt_max_sequence_length: " + std::to_string(kTarget) + "}",
      {{"input_ids", true, kSource, 1000},
       {"attention_mask", true, kSource, 2},
       {"decoder_input_ids", true, kTarget, 1000},
       {"decoder_attention_mask", true, kTarget, 2},
       {"labels", true, kTarget, 1000}});
  return 0;
}

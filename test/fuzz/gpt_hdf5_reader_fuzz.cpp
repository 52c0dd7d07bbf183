// The GPT HDF5 reader (the Model Zoo's `data` layout and release 1.6's example_<i>) on arbitrary
// files.

#include "dataset_reading.hpp"
#include "scratch_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const csrun::fuzz::ScratchDirectory& directory = csrun::fuzz::scratch();
  directory.write("part-0.h5", csrun::fuzz::as_text(data, size));
  constexpr std::int64_t kLength = 8;  // the seeds' sequence length
  csrun::fuzz::check_and_read(
      "{data_processor: GptHDF5DataProcessor, batch_size: 1, data_dir: '" + directory.path() + "'}",
      {{"input_ids", true, kLength, 64},
       {"attention_mask", true, kLength, 64},
       {"labels", true, kLength, 64}});
  return 0;
}

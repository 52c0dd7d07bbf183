// The MNIST IDX reader on arbitrary image and label files.

#include <fuzzer/FuzzedDataProvider.h>

#include "dataset_reading.hpp"
#include "scratch_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const csrun::fuzz::ScratchDirectory& directory = csrun::fuzz::scratch();
  directory.write("train-images-idx3-ubyte", input.ConsumeRandomLengthString());
  directory.write("train-labels-idx1-ubyte", input.ConsumeRemainingBytesAsString());
  csrun::fuzz::check_and_read(
      "{data_processor: MNISTDataProcessor, batch_size: 1, data_dir: '" + directory.path() + "'}",
      {{"input", false, 784, 0}, {"labels", true, 1, 10}});
  return 0;
}

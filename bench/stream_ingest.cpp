// Ingest throughput of csrun's data streaming: a coordinator with N local data workers (real
// `csrun worker` processes on loopback IPC) hands out batches of the MNIST digits (data/digits)
// as fast as the loop could take them, each copied once as the loop copies a batch into the
// step's input. Prints batches/s, samples/s and GB/s of batch payload. The workers pass batches
// through shared memory unless CSRUN_STREAM_SHARED_MEMORY=0 (then in frames, as from another host).
//   stream_ingest CSRUN_BINARY DIGITS_DIR WORKERS BATCH_SIZE BATCHES
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "config/node.hpp"
#include "data/batch_source.hpp"
#include "stream/coordinator.hpp"
#include "stream/rendezvous.hpp"

using namespace csrun;

namespace {

// Where the loop would put the batch: the step's input buffer.
void copy_into(const data::BatchView& batch, std::vector<std::byte>& input) {
  std::byte* at = input.data();
  for (std::size_t f = 0; f < batch.floats.size(); ++f) {
    std::memcpy(at, batch.floats[f].data(), batch.floats[f].size_bytes());
    at += batch.floats[f].size_bytes();
    std::memcpy(at, batch.integers[f].data(), batch.integers[f].size_bytes());
    at += batch.integers[f].size_bytes();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s CSRUN_BINARY DIGITS_DIR WORKERS BATCH_SIZE BATCHES\n", argv[0]);
    return 2;
  }
  std::int64_t workers = std::atoll(argv[3]);
  std::int64_t batch_size = std::atoll(argv[4]);
  std::int64_t batches = std::atoll(argv[5]);
  data::LoaderJob job;
  job.loader.processor = "MNISTDataProcessor";
  job.loader.data_dirs = {argv[2]};
  job.loader.params = config::Node::make_map();
  job.loader.batch_size = batch_size;
  job.fields = {{"input", false, 784, 0}, {"labels", true, 1, 10}};
  job.batch_size = batch_size;
  job.seed = 1;

  char directory[] = "/tmp/csrun-ingest-XXXXXX";
  if (!::mkdtemp(directory)) return 1;
  stream::CoordinatorOptions options;
  options.bind = std::string("ipc://") + directory + "/coordinator";
  options.secret = stream::make_secret();
  options.local_workers = workers;
  options.executable = argv[1];
  options.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  double seconds = 0.0;
  std::size_t bytes = data::batch_byte_size(job.fields, job.batch_size);
  std::vector<std::byte> input(bytes);
  {
    stream::Coordinator coordinator({job}, options);
    auto source = coordinator.batches(job);
    source->seek({0, 0}, batches + 20);
    for (int warm = 0; warm < 20; ++warm)
      source->next();  // workers started and connected
    auto start = std::chrono::steady_clock::now();
    for (std::int64_t b = 0; b < batches; ++b)
      copy_into(source->next(), input);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::filesystem::remove_all(directory);
  double samples = static_cast<double>(batches * batch_size);
  std::printf("%ld %.1f %.0f %.2f\n", static_cast<long>(workers), batches / seconds,
              samples / seconds, static_cast<double>(bytes) * batches / seconds / 1e9);
  return 0;
}

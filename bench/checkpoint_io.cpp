// Checkpoint write and read speed: a checkpoint of GPT-2 small trained with Adam (124M
// parameters and two moments each, 1.49 GB in 439 datasets) written with csrun's writer (fsync
// and rename included) and read back cold (the file dropped from the page cache first): into
// fresh memory of the checkpoint's own, then into the memory of the state it was written from,
// as a run restores its variables (a resumed run's are fresh pages too, so its rate lies
// between; `csrun eval --all`'s second and later checkpoints go into memory already there).
//
// Usage: checkpoint_io DIRECTORY [ROUNDS]   prints one line per round.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "runner/checkpoint.hpp"

namespace {

using csrun::runner::Checkpoint;
using csrun::runner::CheckpointTensor;

Checkpoint gpt2_small_with_adam() {
  Checkpoint checkpoint;
  auto add = [&](const std::string& name, std::vector<std::uint64_t> dims) {
    std::uint64_t elements = 1;
    for (std::uint64_t extent : dims)
      elements *= extent;
    for (const char* state : {"model.", "optimizer.state.exp_avg.", "optimizer.state.exp_avg_sq."})
      checkpoint.tensors[state + name] = {dims, CheckpointTensor::Floats(elements, 0.25f)};
  };
  add("transformer.wte.weight", {50257, 768});
  add("transformer.wpe.weight", {1024, 768});
  for (int layer = 0; layer < 12; ++layer) {
    std::string block = "transformer.h." + std::to_string(layer) + ".";
    for (const char* norm : {"ln_1.", "ln_2."}) {
      add(block + norm + "weight", {768});
      add(block + norm + "bias", {768});
    }
    add(block + "attn.c_attn.weight", {768, 2304});
    add(block + "attn.c_attn.bias", {2304});
    add(block + "attn.c_proj.weight", {768, 768});
    add(block + "attn.c_proj.bias", {768});
    add(block + "mlp.c_fc.weight", {768, 3072});
    add(block + "mlp.c_fc.bias", {3072});
    add(block + "mlp.c_proj.weight", {3072, 768});
    add(block + "mlp.c_proj.bias", {768});
  }
  checkpoint.tensors["global_step"] = {{}, CheckpointTensor::Integers{5}};
  return checkpoint;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void drop_from_page_cache(const std::string& path) {
  int file = ::open(path.c_str(), O_RDONLY);
  if (file < 0) return;
  ::posix_fadvise(file, 0, 0, POSIX_FADV_DONTNEED);
  ::close(file);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: checkpoint_io DIRECTORY [ROUNDS]\n");
    return 2;
  }
  int rounds = argc > 2 ? std::stoi(argv[2]) : 1;
  std::string path = (std::filesystem::path(argv[1]) / "checkpoint_5.mdl").string();
  Checkpoint checkpoint = gpt2_small_with_adam();
  for (int round = 0; round < rounds; ++round) {
    auto start = std::chrono::steady_clock::now();
    csrun::runner::save_checkpoint(path, checkpoint);
    double write = seconds_since(start);
    double gigabytes = static_cast<double>(std::filesystem::file_size(path)) / 1e9;
    drop_from_page_cache(path);
    start = std::chrono::steady_clock::now();
    Checkpoint read = csrun::runner::load_checkpoint(path);
    double load = seconds_since(start);
    drop_from_page_cache(path);
    start = std::chrono::steady_clock::now();
    csrun::runner::load_checkpoint(
        path, [&](const std::string& key, const std::vector<std::uint64_t>&, bool) {
          auto& floats = std::get<CheckpointTensor::Floats>(checkpoint.tensors.at(key).values);
          return csrun::runner::EntryPlacement::read_into(floats);
        });
    double restore = seconds_since(start);
    std::printf(
        "csrun: %.2f GB, write+fsync %.2f s (%.2f GB/s), cold read %.2f s (%.2f GB/s), into "
        "the state's memory %.2f s (%.2f GB/s)\n",
        gigabytes, write, gigabytes / write, load, gigabytes / load, restore, gigabytes / restore);
    std::filesystem::remove(path);
  }
}

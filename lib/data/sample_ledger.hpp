#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <string_view>

#include "batch_source.hpp"

namespace csrun::data {

// A record of every sample a run consumed, one tab-separated line each:
//   ROLE  EPOCH  POSITION  INDEX  PRODUCER
// (train or eval, the epoch, the sample's place in that epoch's order, its index in the
// dataset, and what produced it: "in-process" or "worker N"). Lines are appended and flushed
// per batch, so a ledger survives a killed run.
class SampleLedger {
 public:
  explicit SampleLedger(const std::string& path);  // throws std::runtime_error naming the file

  void record(LoaderRole role, BatchPosition at, std::span<const std::int64_t> indices,
              std::string_view producer);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace csrun::data

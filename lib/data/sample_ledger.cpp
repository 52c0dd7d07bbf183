#include "sample_ledger.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace csrun::data {

SampleLedger::SampleLedger(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_)
    throw std::runtime_error("cannot write the sample ledger " + path + ": " +
                             std::strerror(errno));
}

void SampleLedger::record(LoaderRole role, BatchPosition at, std::span<const std::int64_t> indices,
                          std::string_view producer) {
  const char* name = role == LoaderRole::train ? "train" : "eval";
  for (std::size_t i = 0; i < indices.size(); ++i) {
    out_ << name << '\t' << at.epoch << '\t' << at.sample + static_cast<std::int64_t>(i) << '\t'
         << indices[i] << '\t' << producer << '\n';
  }
  out_.flush();
  if (!out_)
    throw std::runtime_error("cannot write the sample ledger " + path_ + ": " +
                             std::strerror(errno));
}

}  // namespace csrun::data

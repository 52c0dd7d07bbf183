#pragma once

#include <catch2/catch.hpp>

#include <filesystem>

#include "runner/checkpoint.hpp"

namespace csrun::test {

// Checks that two checkpoints hold the same entries with the same values, bit for bit.
inline void expect_same_weights(const std::filesystem::path& a, const std::filesystem::path& b) {
  auto left = runner::load_checkpoint(a.string());
  auto right = runner::load_checkpoint(b.string());
  REQUIRE(left.tensors.size() == right.tensors.size());
  for (const auto& [key, tensor] : left.tensors) {
    INFO(key);
    CHECK(tensor == right.tensors.at(key));
  }
}

}  // namespace csrun::test

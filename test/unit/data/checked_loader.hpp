#pragma once

// Shared by the readers' tests: a dataloader section checked as csrun checks it, and a row of a
// batch's integer field.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "support/params_fixture.hpp"

namespace csrun::test {

// The dataloader `loader` (a flow mapping) of a trainer-format file whose model is `model`,
// checked against its processor as `role` reads it.
inline data::DataloaderSpec checked_loader(const std::string& model, const std::string& loader,
                                           data::LoaderRole role = data::LoaderRole::train) {
  auto loaded = load_params_text(
      "trainer:\n  init:\n    device: CPU\n    model: " + model +
      "\n    loop: {max_steps: 1}\n  fit:\n    train_dataloader: " + loader + "\n");
  INFO(loaded.dump());
  config::Diagnostics diagnostics;
  data::DataloaderContext context{role, 1, false, {}};
  auto spec = data::check_dataloader(loaded.trainer().fit->train_dataloader, context, diagnostics);
  INFO((diagnostics.all().empty() ? std::string() : diagnostics.all().front().to_string()));
  REQUIRE(spec);
  return *spec;
}

// Row `row` (`width` values) of the integer field `field`.
inline std::vector<std::int32_t> row_of(const data::BatchData& batch, std::size_t field,
                                        std::int64_t row, std::int64_t width) {
  auto first = batch.integers[field].begin() + row * width;
  return {first, first + width};
}

}  // namespace csrun::test

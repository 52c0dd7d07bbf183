#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "data/dataset.hpp"

using namespace csrun;

namespace {

const std::vector<data::SampleField> kFields = {
    {"input", false, 3, 0},
    {"labels", true, 1, 10},
};

data::BatchData numbered_batch() {
  data::BatchData batch(kFields, 2);
  batch.floats[0] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};
  batch.integers[1] = {7, 9};
  return batch;
}

}  // namespace

TEST_CASE("a batch's bytes are viewed as its fields without a copy") {
  data::BatchData batch = numbered_batch();
  std::vector<std::byte> bytes(data::batch_byte_size(kFields, 2));
  REQUIRE(bytes.size() == 8 * sizeof(float));
  batch.copy_to(bytes);
  data::BatchView view(bytes, kFields, 2);
  REQUIRE(view.floats.size() == 2);
  CHECK(std::ranges::equal(view.floats[0], batch.floats[0]));
  CHECK(view.floats[1].empty());
  CHECK(view.integers[0].empty());
  CHECK(std::ranges::equal(view.integers[1], batch.integers[1]));
  CHECK(static_cast<const void*>(view.floats[0].data()) == bytes.data());
  CHECK(static_cast<const void*>(view.integers[1].data()) == bytes.data() + 6 * sizeof(float));

  data::BatchView of_batch(batch);
  CHECK(of_batch.floats[0].data() == batch.floats[0].data());
  CHECK(of_batch.integers[1].data() == batch.integers[1].data());
}

TEST_CASE("bytes of the wrong size or alignment are not viewed as a batch") {
  std::vector<std::byte> bytes(8 * sizeof(float) + 1);
  CHECK_THROWS_WITH(data::BatchView(std::span(bytes).first(8 * sizeof(float) - 4), kFields, 2),
                    "a batch of 28 bytes where 32 were expected");
  CHECK_THROWS_WITH(data::BatchView(std::span(bytes).subspan(1), kFields, 2),
                    "a batch whose bytes are not aligned for its values");
}

// T5's relative position buckets against PyTorch's (test/data/golden/relative_buckets.json, made
// by scripts/golden/curves.py): every distance up to 1,200 positions either way, for 8, 32 and 64
// buckets, in both directions. The logarithmic buckets' edges depend on float32 rounding.

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "models/model_definitions.hpp"

TEST_CASE("relative position buckets are PyTorch's at every distance") {
  std::ifstream file(std::string(CSRUN_TEST_DATA) + "/golden/relative_buckets.json");
  REQUIRE(file);
  nlohmann::json golden = nlohmann::json::parse(file);
  REQUIRE(golden["cases"].size() == 6);
  for (const nlohmann::json& c : golden["cases"]) {
    std::int64_t buckets = c["num_buckets"];
    bool bidirectional = c["bidirectional"];
    std::int64_t relative = c["first"];
    INFO(buckets << " buckets, " << (bidirectional ? "bidirectional" : "looking back"));
    std::int64_t wrong = 0;
    for (std::int64_t expected : c["buckets"].get<std::vector<std::int64_t>>()) {
      if (csrun::models::relative_position_bucket(relative, bidirectional, buckets) != expected) {
        UNSCOPED_INFO("distance " << relative << ": PyTorch's bucket " << expected);
        ++wrong;
      }
      ++relative;
    }
    CHECK(wrong == 0);
  }
}

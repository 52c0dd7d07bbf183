// docs/training.md: with num_csx replicas, each replica reads its share of every global batch;
// the shares of a batch are the whole batch's samples, in order, split into equal parts.

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "data/batch_source.hpp"
#include "data/loader_job.hpp"
#include "data/sample_ledger.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

data::LoaderJob fake_mnist_job(std::int64_t share = 0, std::int64_t shares = 1) {
  data::LoaderJob job;
  job.loader.processor = "MNISTDataProcessor";
  job.loader.fake = true;
  job.loader.shuffle = true;
  job.loader.batch_size = 12;
  job.fields = {{"input", false, 784, 0}, {"labels", true, 1, 10}};
  job.batch_size = 12;
  job.seed = 3;
  job.share = share;
  job.shares = shares;
  return job;
}

// Field `f` of the next batch of `source`, as values.
template <class T>
std::vector<T> field_values(const std::vector<std::span<const T>>& fields, std::size_t f) {
  return {fields[f].begin(), fields[f].end()};
}

}  // namespace

TEST_CASE("the shares of a batch, read apart, are the whole batch in order") {
  test::TempDir dir;
  data::SampleLedger whole_ledger((dir.path() / "whole.tsv").string());
  data::SampleLedger shares_ledger((dir.path() / "shares.tsv").string());
  auto whole = data::read_in_process(fake_mnist_job(), &whole_ledger);
  std::vector<std::unique_ptr<data::BatchSource>> shares;
  for (std::int64_t share = 0; share < 3; ++share)
    shares.push_back(data::read_in_process(fake_mnist_job(share, 3), &shares_ledger));
  // A batch inside the first epoch and one at the start of the next, after a seek.
  for (data::BatchPosition at : {data::BatchPosition{0, 24}, data::BatchPosition{1, 0}}) {
    whole->seek(at, 1);
    const data::BatchView& batch = whole->next();
    std::vector<float> inputs;
    std::vector<std::int32_t> labels;
    for (auto& share : shares) {
      share->seek(at, 1);
      const data::BatchView& part = share->next();
      REQUIRE(part.integers[1].size() == 4);
      inputs.insert(inputs.end(), part.floats[0].begin(), part.floats[0].end());
      labels.insert(labels.end(), part.integers[1].begin(), part.integers[1].end());
    }
    CHECK(inputs == field_values(batch.floats, 0));
    CHECK(labels == field_values(batch.integers, 1));
  }
  // The shares' ledger names each sample at its place in the whole batch.
  std::ifstream whole_lines(dir.path() / "whole.tsv");
  std::ifstream share_lines(dir.path() / "shares.tsv");
  std::vector<std::string> expected, got;
  for (std::string line; std::getline(whole_lines, line);)
    expected.push_back(line);
  for (std::string line; std::getline(share_lines, line);)
    got.push_back(line);
  std::sort(expected.begin(), expected.end());
  std::sort(got.begin(), got.end());
  CHECK(got.size() == 24);
  CHECK(got == expected);
}

TEST_CASE("a loader job's share travels to workers, and a share that is none is refused") {
  std::vector<data::LoaderJob> jobs = {fake_mnist_job(2, 3)};
  std::vector<data::LoaderJob> decoded = data::decode_loader_jobs(data::encode_loader_jobs(jobs));
  REQUIRE(decoded.size() == 1);
  CHECK(decoded[0].share == 2);
  CHECK(decoded[0].shares == 3);
  CHECK(decoded[0].rows() == 4);
  CHECK(decoded[0].first_row() == 8);
  for (auto [share, shares] : {std::pair{3, 3}, std::pair{-1, 3}, std::pair{0, 5}}) {
    std::vector<data::LoaderJob> bad = {fake_mnist_job(share, shares)};
    CHECK_THROWS_WITH(data::decode_loader_jobs(data::encode_loader_jobs(bad)),
                      Catch::Contains("share " + std::to_string(share) + " of " +
                                      std::to_string(shares) + " is not a share of a batch of 12"));
  }
}

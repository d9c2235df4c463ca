// distributed_indices() against index lists produced by PyTorch's own DistributedSampler
// (data/make_sampler_cases.py): shuffle on/off, padding, n < world, drop_last, epochs, seeds.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "sampler.h"

namespace {

using ddpdesk::SamplerOptions;
using nlohmann::json;

const json& cases() {
  static const json data = [] {
    std::ifstream in(DDPDESK_SAMPLER_CASES);
    if (!in) throw std::runtime_error("cannot read " + std::string(DDPDESK_SAMPLER_CASES));
    return json::parse(in);
  }();
  return data;
}

SamplerOptions options(const json& c, int rank) {
  SamplerOptions o;
  o.dataset_size = c.at("n").get<std::int64_t>();
  o.world = c.at("world").get<int>();
  o.rank = rank;
  o.shuffle = c.at("shuffle").get<bool>();
  o.seed = c.at("seed").get<std::int64_t>();
  o.drop_last = c.at("drop_last").get<bool>();
  return o;
}

std::string describe(const json& c) {
  json d = c;
  d.erase("ranks");
  d.erase("head");
  d.erase("tail");
  return d.dump();
}

TEST(Sampler, MatchesPyTorchFullLists) {
  const json& all = cases().at("cases");
  ASSERT_GT(all.size(), 100u);
  for (const json& c : all) {
    const auto& ranks = c.at("ranks");
    ASSERT_EQ(ranks.size(), c.at("world").get<std::size_t>());
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
      const auto expected = ranks[r].get<std::vector<std::int64_t>>();
      const SamplerOptions o = options(c, r);
      EXPECT_EQ(ddpdesk::distributed_indices(o, c.at("epoch").get<std::int64_t>()), expected)
          << describe(c) << " rank " << r;
      EXPECT_EQ(ddpdesk::samples_per_rank(o), static_cast<std::int64_t>(expected.size()))
          << describe(c) << " rank " << r;
    }
  }
}

TEST(Sampler, MatchesPyTorchAtDatasetScale) {
  for (const json& c : cases().at("large")) {
    const auto got = ddpdesk::distributed_indices(options(c, c.at("rank").get<int>()),
                                                  c.at("epoch").get<std::int64_t>());
    const auto head = c.at("head").get<std::vector<std::int64_t>>();
    const auto tail = c.at("tail").get<std::vector<std::int64_t>>();
    ASSERT_EQ(static_cast<std::int64_t>(got.size()), c.at("count").get<std::int64_t>())
        << describe(c);
    EXPECT_EQ(std::vector<std::int64_t>(got.begin(), got.begin() + head.size()), head)
        << describe(c);
    EXPECT_EQ(std::vector<std::int64_t>(got.end() - tail.size(), got.end()), tail) << describe(c);
    EXPECT_EQ(std::accumulate(got.begin(), got.end(), std::int64_t{0}),
              c.at("sum").get<std::int64_t>())
        << describe(c);
  }
}

TEST(Sampler, RanksPartitionTheEpoch) {
  // Without padding or dropping, the ranks together see every index exactly once.
  SamplerOptions o;
  o.dataset_size = 96;
  o.world = 4;
  o.seed = 5;
  std::vector<int> seen(96, 0);
  for (o.rank = 0; o.rank < o.world; ++o.rank) {
    for (std::int64_t i : ddpdesk::distributed_indices(o, 3)) ++seen[i];
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(Sampler, EpochChangesTheOrder) {
  SamplerOptions o;
  o.dataset_size = 50;
  EXPECT_NE(ddpdesk::distributed_indices(o, 0), ddpdesk::distributed_indices(o, 1));
}

// An epoch's order depends on the seed and the epoch alone, not on what was drawn before it: a
// resumed rank computes only the epochs it has left, a fresh one all of them.
TEST(Sampler, AnEpochsOrderDoesNotDependOnWhatWasDrawnBefore) {
  SamplerOptions o;
  o.dataset_size = 50;
  o.seed = 7;
  const auto first = ddpdesk::distributed_indices(o, 1);
  // Other epochs, another seed and LibTorch's global generator drawn from in between.
  ddpdesk::distributed_indices(o, 0);
  ddpdesk::distributed_indices(o, 2);
  SamplerOptions other = o;
  other.seed = 8;
  EXPECT_NE(ddpdesk::distributed_indices(other, 1), first) << "the seed changes the order";
  torch::manual_seed(123);
  torch::rand({100});
  EXPECT_EQ(ddpdesk::distributed_indices(o, 1), first);
}

TEST(Sampler, RejectsBadOptions) {
  SamplerOptions o;
  o.dataset_size = 10;
  o.world = 2;
  o.rank = 2;
  EXPECT_THROW(ddpdesk::distributed_indices(o, 0), std::invalid_argument);
  o.rank = -1;
  EXPECT_THROW(ddpdesk::samples_per_rank(o), std::invalid_argument);
  o.rank = 0;
  o.world = 0;
  EXPECT_THROW(ddpdesk::samples_per_rank(o), std::invalid_argument);
}

}  // namespace

// Exact gradient accumulation across real worker processes (Gloo on CPU): world=2, batch=4,
// accum=2 must give the global loss of world=1, batch=16, accum=1 at every optimizer step.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

struct Trained {
  std::vector<std::vector<nlohmann::json>> steps;  // per rank
};

Trained train(int world, int batch, int accum, const std::string& task = "seed",
              const std::string& size = "960", const std::string& comm = "auto",
              const std::string& overlap = "") {
  LaunchOptions o;
  o.world = world;
  o.args = {"--task",         task,
            "--dataset-size", size,
            "--batch-size",   std::to_string(batch),
            "--accum-steps",  std::to_string(accum),
            "--epochs",       "1",
            "--lr",           "1e-3"};
  o.env = {{"DDPDESK_DEBUG_STEPS", "1"}, {"DDPDESK_COMM", comm}, {"DDPDESK_OVERLAP", overlap}};
  RunSteps r = run_steps(o, "accum");
  EXPECT_EQ(r.failed, "");
  return {r.steps};
}

// The same run for tests that only read it (worker launches are most of this file's time: each
// LibTorch process start alone costs about half a second of CPU). Runs whose equality is the
// assertion itself call train() for the second one.
const Trained& shared_run(int world, int batch, int accum, const std::string& task = "seed",
                          const std::string& size = "960", const std::string& comm = "auto",
                          const std::string& overlap = "") {
  static std::map<std::string, Trained> runs;
  const std::string key = std::to_string(world) + " " + std::to_string(batch) + " " +
                          std::to_string(accum) + " " + task + " " + size + " " + comm + " " +
                          overlap;
  auto it = runs.find(key);
  if (it == runs.end())
    it = runs.emplace(key, train(world, batch, accum, task, size, comm, overlap)).first;
  return it->second;
}

}  // namespace

TEST(Accumulation, WorldTwoAccumTwoEqualsOneBigBatch) {
  const Trained big = train(1, 16, 1);
  const Trained& acc = shared_run(2, 4, 2);
  ASSERT_EQ(big.steps[0].size(), 60u);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(acc.steps[r].size(), big.steps[0].size());
  for (std::size_t i = 0; i < big.steps[0].size(); ++i) {
    const double want = big.steps[0][i]["global_loss"];
    // The allreduced global loss (the same value on both ranks: one rank suffices) ...
    const double global = acc.steps[0][i]["global_loss"];
    EXPECT_NEAR(global, want, 1e-5 * std::fabs(want)) << "step " << i + 1;
    // ... and, independently of that allreduce, each rank's own window loss over its half of
    // the samples: their mean is the world=1 run's loss over all of them.
    const double own =
        (acc.steps[0][i]["loss"].get<double>() + acc.steps[1][i]["loss"].get<double>()) / 2;
    EXPECT_NEAR(own, want, 1e-5 * std::fabs(want)) << "step " << i + 1;
    EXPECT_NE(acc.steps[0][i]["loss"], acc.steps[1][i]["loss"]) << "the ranks saw the same samples";
    EXPECT_EQ(acc.steps[0][i]["samples"], big.steps[0][i]["samples"]);
  }
}

TEST(Accumulation, ParametersBitwiseEqualAcrossRanksAfterEveryStep) {
  Trained acc = train(2, 4, 3);
  ASSERT_FALSE(acc.steps[0].empty());
  ASSERT_EQ(acc.steps[0].size(), acc.steps[1].size());
  for (std::size_t i = 0; i < acc.steps[0].size(); ++i)
    EXPECT_EQ(acc.steps[0][i]["param_hash"], acc.steps[1][i]["param_hash"]) << "step " << i + 1;
  // The parameters do change: otherwise equal hashes would prove nothing.
  EXPECT_NE(acc.steps[0].front()["param_hash"], acc.steps[0].back()["param_hash"]);
}

TEST(Accumulation, NonBoundaryMicroStepsIssueNoCollectives) {
  // Seed model: one gradient bucket. One broadcast at start, then exactly one allreduce per
  // optimizer step however many micro-steps the window has.
  for (int accum : {1, 4}) {
    Trained run = train(2, 4, accum);
    ASSERT_FALSE(run.steps[0].empty());
    for (const auto& s : run.steps[0])
      EXPECT_EQ(s["collectives"].get<int>(), 1 + s["step"].get<int>()) << "accum " << accum;
  }
}

TEST(Accumulation, LastPartialWindowStepsWithItsTrueSampleCount) {
  // 100 samples, world 2, batch 4, accum 4: 50 per rank = 13 micro-batches (last holds 2) =
  // 4 windows, the last with one micro-batch. Window k of the two ranks together holds the
  // shuffled samples [32k, 32k + 32) (rank r takes every other one), which is exactly window k
  // of world 1 with batch 32: the last holds 4 samples. A last window scaled by its nominal
  // size (32) instead of its true one (4) would give a loss 8x too small there.
  Trained acc = train(2, 4, 4, "seed", "100");
  Trained one = train(1, 32, 1, "seed", "100");
  ASSERT_EQ(acc.steps[0].size(), 4u);
  ASSERT_EQ(one.steps[0].size(), 4u);
  EXPECT_EQ(acc.steps[0].back()["samples"].get<int>(), 100);
  for (std::size_t i = 0; i < acc.steps[0].size(); ++i) {
    const double want = one.steps[0][i]["global_loss"];
    EXPECT_NEAR(acc.steps[0][i]["global_loss"].get<double>(), want, 1e-5 * std::fabs(want))
        << "step " << i + 1;
  }
}

TEST(Accumulation, IdenticalRunsGiveIdenticalLosses) {
  const Trained& a = shared_run(2, 4, 2);
  const Trained b = train(2, 4, 2);  // a second, separate run
  ASSERT_EQ(a.steps[0].size(), b.steps[0].size());
  for (std::size_t i = 0; i < a.steps[0].size(); ++i) {
    EXPECT_EQ(a.steps[0][i]["loss"], b.steps[0][i]["loss"]);
    EXPECT_EQ(a.steps[1][i]["global_loss"], b.steps[1][i]["global_loss"]);
  }
}

TEST(Accumulation, GlooAndSharedMemoryAgreeBitwise) {
  // With two ranks every sum is a + b, whichever transport computes it: the runs must match
  // exactly, which also checks the Gloo path end to end; with the comm thread's overlap and
  // without (the runs of OverlappedAndInlineBucketsAgreeBitwise, so each is launched once).
  for (const char* overlap : {"0", "1"}) {
    const Trained& shm = shared_run(2, 8, 3, "fmnist-mlp", "1536", "shm", overlap);
    const Trained& gloo = shared_run(2, 8, 3, "fmnist-mlp", "1536", "gloo", overlap);
    ASSERT_EQ(shm.steps[0].size(), 32u);
    ASSERT_EQ(gloo.steps[0].size(), shm.steps[0].size());
    for (std::size_t i = 0; i < shm.steps[0].size(); ++i) {
      EXPECT_EQ(shm.steps[0][i]["global_loss"], gloo.steps[0][i]["global_loss"]) << overlap << i;
      EXPECT_EQ(shm.steps[1][i]["param_hash"], gloo.steps[1][i]["param_hash"]) << overlap << i;
    }
  }
}

TEST(Accumulation, OverlappedAndInlineBucketsAgreeBitwise) {
  // fmnist-mlp has two buckets: with overlap the first is reduced on the comm thread while
  // backward still runs; the result must not depend on it.
  for (const char* comm : {"shm", "gloo"}) {
    const Trained& inline_ = shared_run(2, 8, 3, "fmnist-mlp", "1536", comm, "0");
    const Trained& overlap = shared_run(2, 8, 3, "fmnist-mlp", "1536", comm, "1");
    ASSERT_EQ(inline_.steps[0].size(), 32u);
    ASSERT_EQ(overlap.steps[0].size(), inline_.steps[0].size());
    for (std::size_t i = 0; i < inline_.steps[0].size(); ++i) {
      EXPECT_EQ(inline_.steps[0][i]["param_hash"], overlap.steps[0][i]["param_hash"]) << comm;
      EXPECT_EQ(overlap.steps[0][i]["param_hash"], overlap.steps[1][i]["param_hash"]) << comm;
      // Two buckets per optimizer step, nothing on the other micro-steps.
      EXPECT_EQ(overlap.steps[0][i]["collectives"].get<int>(),
                1 + 2 * overlap.steps[0][i]["step"].get<int>());
    }
  }
}

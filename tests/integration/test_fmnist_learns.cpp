// Real Fashion-MNIST data, two ranks: the loss falls and test accuracy is far above chance.
#include <gtest/gtest.h>

#include "rank_launcher.h"

using namespace ddpdesk::test;

TEST(FashionMnist, TwoRankMlpLearns) {
  const std::string dir = temp_dir("fmnist");
  LaunchOptions o;
  o.world = 2;
  o.args = {"--task",         "fmnist-mlp",
            "--dataset-size", "6000",
            "--batch-size",   "32",
            "--accum-steps",  "2",
            "--epochs",       "2",
            "--lr",           "1e-3",
            "--metrics-file", dir + "/m{rank}.jsonl"};
  RankRun r = launch_ranks(o);
  ASSERT_EQ(r.exit_codes, (std::vector<int>{0, 0})) << r.stderr_text[0] << r.stderr_text[1];
  auto steps = read_messages(dir + "/m0.jsonl", "step");
  ASSERT_EQ(steps.size(), 94u);  // 3000 per rank / 32 = 94 micro-batches / 2 = 47 windows x 2
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) {
    first += steps[i]["global_loss"].get<double>();
    last += steps[steps.size() - 1 - i]["global_loss"].get<double>();
  }
  EXPECT_LT(last, 0.5 * first);
  auto evals = read_messages(dir + "/m0.jsonl", "eval");
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals.back()["samples"], 10000);  // the whole test set, sharded, summed exactly
  EXPECT_GT(evals.back()["accuracy"].get<double>(), 0.7);  // chance is 0.1
}

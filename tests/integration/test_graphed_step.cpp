// --cuda-graph's step path (engine/train/graphed_step.h) on CPU ranks, through the test-only fault
// DDPDESK_FAULT_GRAPHED_CPU (the path without recording: the whole training set gathered from one
// copy into fixed buffers, the window loss and the loss multiplier in fixed tensors, every bucket
// reduced after the window, the optimizer's begin_step/update): real worker processes train
// bitwise as the ordinary path does, step by step, including an epoch's short last window. What
// only a GPU can show — the recording and its replays — is run_gpu_check.sh's.
#include <gtest/gtest.h>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

std::vector<std::vector<nlohmann::json>> train(bool graphed, std::vector<std::string> args) {
  LaunchOptions o;
  o.world = 2;
  o.args = std::move(args);
  o.env = {{"DDPDESK_DEBUG_STEPS", "1"}, {"DDPDESK_FAULT_GRAPHED_CPU", graphed ? "1" : "0"}};
  RunSteps r = run_steps(o, "graphed");
  EXPECT_EQ(r.failed, "");
  return r.steps;
}

void expect_bitwise_equal(const std::vector<std::string>& args, std::size_t steps) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  const auto ordinary = train(false, args);
  const auto graphed = train(true, args);
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(ordinary[k].size(), steps) << "rank " << k;
    ASSERT_EQ(graphed[k].size(), steps) << "rank " << k;
    for (std::size_t i = 0; i < steps; ++i) {
      const nlohmann::json &a = ordinary[k][i], &b = graphed[k][i];
      EXPECT_EQ(b["step"], a["step"]);
      EXPECT_EQ(b["samples"], a["samples"]) << "step " << i + 1;
      EXPECT_EQ(b["loss"], a["loss"]) << "rank " << k << " step " << i + 1;
      EXPECT_EQ(b["global_loss"], a["global_loss"]) << "step " << i + 1;
      EXPECT_EQ(b["param_hash"], a["param_hash"]) << "rank " << k << " step " << i + 1;
      // The graphed path counts forward and backward together (a replay is one launch): proof
      // that it is the path that ran.
      EXPECT_EQ(b["time_ms"]["forward"], 0.0) << "step " << i + 1;
      EXPECT_GT(a["time_ms"]["forward"].get<double>(), 0.0) << "step " << i + 1;
    }
  }
}

}  // namespace

// 250 samples per rank in windows of 16 × 2: seven full windows and one of 26 (a micro-batch of
// 16 and one of 10, a size of its own), over two epochs (a new sample order each).
TEST(GraphedStep, TrainsBitwiseAsTheOrdinaryPath) {
  expect_bitwise_equal(
      {"--task", "fmnist-mlp", "--dataset-size", "500", "--batch-size", "16", "--accum-steps", "2",
       "--epochs", "2", "--lr", "1e-3", "--weight-decay", "1e-4"},
      16);
}

// The CNN under bf16 autocast (the forward inside the recorded micro-step on a GPU).
TEST(GraphedStep, Bf16CnnTrainsBitwiseAsTheOrdinaryPath) {
  expect_bitwise_equal({"--task", "fmnist-cnn", "--dataset-size", "96", "--batch-size", "8",
                        "--accum-steps", "2", "--epochs", "1", "--precision", "bf16"},
                       3);
}

// A data set without a whole-tensor form (the seed task's generated samples) goes through the
// path that gathers on the CPU and copies into the buffers: the same steps again.
TEST(GraphedStep, DataGatheredOnTheCpuTrainsBitwiseAsTheOrdinaryPath) {
  expect_bitwise_equal({"--task", "seed", "--dataset-size", "200", "--batch-size", "8",
                        "--accum-steps", "2", "--epochs", "1"},
                       7);
}

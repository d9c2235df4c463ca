// Mixed precision (--precision bf16) with real worker processes on CPU: the forward runs under
// autocast as PyTorch's torch.autocast("cpu", torch.bfloat16) runs it (a user task against
// tests/integration/py/user_ddp_reference.py --precision bf16), a resumed bf16 run repeats an
// uninterrupted one bitwise, and accumulation stays exact up to bf16's rounding of the forward.
// fp16 needs CUDA: its refusal on CPU is test_run_spec's; its loss scale is test_trainer_parts'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "rank_launcher.h"
#include "shell_text.h"

using namespace ddpdesk::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSource = DDPDESK_SOURCE_DIR;
const std::string kPython = "/usr/bin/python3";  // Debian's, with python3-torch

struct Trained {
  std::vector<std::vector<json>> steps;  // per rank
};

Trained train(int world, const std::vector<std::string>& args, const std::string& tag) {
  LaunchOptions o;
  o.world = world;
  o.args = args;
  o.env = {{"DDPDESK_DEBUG_STEPS", "1"}};
  RunSteps r = run_steps(o, tag);
  EXPECT_EQ(r.failed, "");
  return {r.steps};
}

std::vector<std::string> mlp(int batch, int accum, const std::string& precision) {
  return {"--task",         "fmnist-mlp",
          "--dataset-size", "1200",
          "--batch-size",   std::to_string(batch),
          "--accum-steps",  std::to_string(accum),
          "--epochs",       "1",
          "--precision",    precision,
          "--seed",         "3"};
}

}  // namespace

// A scripted MLP of the user's (synthetic data, MSE), world 2: the engine's bf16 losses follow
// PyTorch DDP's under torch.autocast. The first step's loss is the untrained model's, so there
// the two forwards must agree to float32 rounding (4e-8 measured) — and the fp32 forward's
// differs by far more (3e-4), which proves the autocast is on. After it, the float32 sums'
// different order moves a weight across a bf16 rounding boundary now and then, and the runs
// drift apart at bf16's resolution (under 4e-3 in 8 steps here).
TEST(Precision, Bf16FollowsPyTorchAutocast) {
  const std::string dir = temp_dir("prec-ref");
  const std::string make = kPython + " " + quoted(kSource + "/examples/make_user_task.py") +
                           " --out " + quoted(dir) +
                           " --data synthetic --loss mse --limit 400 --eval-limit 100 >/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0);
  const std::string ref_out = dir + "/ref.jsonl";
  const std::string ref =
      kPython + " " + quoted(kSource + "/tests/integration/py/user_ddp_reference.py") +
      " --nproc 2 --model " + quoted(dir + "/model.pt") + " --data " +
      quoted(dir + "/train.safetensors") +
      " --loss mse --batch 25 --epochs 1 --precision bf16 --out " + quoted(ref_out) + " >/dev/null";
  ASSERT_EQ(std::system(ref.c_str()), 0);
  std::vector<double> want;
  {
    std::ifstream in(ref_out);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) want.push_back(json::parse(line)["global_loss"]);
  }
  const auto user = [&](const std::string& precision) {
    return train(2,
                 {"--task", "script", "--model", dir + "/model.pt", "--train-data",
                  dir + "/train.safetensors", "--loss", "mse", "--batch-size", "25", "--epochs",
                  "1", "--precision", precision},
                 "prec-user");
  };
  const Trained bf16 = user("bf16");
  const Trained fp32 = user("fp32");
  ASSERT_EQ(want.size(), 8u);  // 400 samples, 2 ranks of 25
  ASSERT_EQ(bf16.steps[0].size(), want.size());
  const double first = bf16.steps[0][0]["global_loss"];
  const double first_fp32 = fp32.steps[0][0]["global_loss"];
  EXPECT_NEAR(first, want[0], 1e-6 * std::fabs(want[0]));
  EXPECT_GT(std::fabs(first_fp32 - want[0]), 3e-5 * std::fabs(want[0]))
      << "bf16's first loss equals fp32's: autocast did not run";
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(bf16.steps[0][i]["global_loss"].get<double>(), want[i], 1e-2 * std::fabs(want[i]))
        << "step " << i + 1;
}

// A bf16 run resumed from its step-5 checkpoint repeats the uninterrupted run bitwise: the
// parameters after every later step hash alike (autocast keeps no state across steps: its cast
// weights are dropped after each forward).
TEST(Precision, Bf16ResumeIsBitwise) {
  const std::string a = temp_dir("prec-a"), b = temp_dir("prec-b");
  std::vector<std::string> whole = mlp(50, 1, "bf16");
  whole.insert(whole.end(), {"--run-dir", a, "--checkpoint-every", "5"});
  const Trained first = train(2, whole, "prec-whole");
  std::vector<std::string> rest = mlp(50, 1, "bf16");
  rest.insert(rest.end(), {"--run-dir", b, "--resume", a + "/checkpoints/step-00000005.pt"});
  const Trained second = train(2, rest, "prec-rest");
  ASSERT_EQ(first.steps[0].size(), 12u);  // 1200 samples, 2 ranks of 50
  ASSERT_EQ(second.steps[0].size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    const json& want = first.steps[0][i + 5];
    EXPECT_EQ(second.steps[0][i]["step"], want["step"]);
    EXPECT_EQ(second.steps[0][i]["param_hash"], want["param_hash"]) << "step " << i + 6;
    EXPECT_EQ(second.steps[1][i]["global_loss"], first.steps[1][i + 5]["global_loss"]);
  }
}

// World 2 × accumulation 2 against world 1 with the whole window in one micro-batch: the first
// step agrees to float32 rounding (the forward of a sample does not depend on its micro-batch);
// after it the float32 gradient sums, added in another order, differ in their last bits (fp32's
// rule is 1e-5, test_accumulation), a weight now and then rounds to another bf16 value, and the
// runs drift apart at bf16's resolution (3e-3 by step 12 here). The ranks' parameters stay
// bitwise equal.
TEST(Precision, Bf16AccumulationMatchesOneBigBatch) {
  const Trained acc = train(2, mlp(25, 2, "bf16"), "prec-acc");
  const Trained big = train(1, mlp(100, 1, "bf16"), "prec-big");
  ASSERT_EQ(big.steps[0].size(), 12u);
  ASSERT_EQ(acc.steps[0].size(), big.steps[0].size());
  const double first = big.steps[0][0]["global_loss"];
  EXPECT_NEAR(acc.steps[0][0]["global_loss"].get<double>(), first, 1e-6 * first);
  for (std::size_t i = 0; i < big.steps[0].size(); ++i) {
    const double want = big.steps[0][i]["global_loss"];
    EXPECT_NEAR(acc.steps[0][i]["global_loss"].get<double>(), want, 1e-2 * std::fabs(want))
        << "step " << i + 1;
    EXPECT_EQ(acc.steps[0][i]["param_hash"], acc.steps[1][i]["param_hash"]) << "step " << i + 1;
  }
}

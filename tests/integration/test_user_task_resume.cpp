// The user's task stops and resumes exactly like the built-in ones, randomness included: a
// scripted model with dropout and BatchNorm, stopped by SIGTERM mid-run and resumed from its run
// directory, gives bit-identical global losses to the run that was never interrupted (dropout
// draws from a per-rank, per-step stream; BatchNorm statistics are in the checkpoint). The
// exported model.pt is rewritten at the stop and at the end.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

std::vector<double> global_losses(const std::string& path) {
  std::vector<double> out;
  for (const auto& s : read_messages(path, "step")) out.push_back(s["global_loss"]);
  return out;
}

class UserTaskResume : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("user-resume");
    const std::string cmd = std::string("/usr/bin/python3 ") + DDPDESK_SOURCE_DIR +
                            "/examples/make_user_task.py --out " + dir_ +
                            " --data synthetic --model small --dropout 0.3 --batchnorm"
                            " --limit 4000 --eval-limit 200 --seed 11 > " +
                            dir_ + "/make.log 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "examples/make_user_task.py failed: see " << dir_;
    spec_ = {"--task",        "script",
             "--model",       dir_ + "/model.pt",
             "--train-data",  dir_ + "/train.safetensors",
             "--eval-data",   dir_ + "/eval.safetensors",
             "--batch-size",  "4",
             "--accum-steps", "2",
             "--epochs",      "2",
             "--seed",        "5"};
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
  std::vector<std::string> spec_;
};

TEST_F(UserTaskResume, StopAndResumeGiveTheUninterruptedLossesBitForBit) {
  LaunchOptions ref;
  ref.world = 2;
  ref.args = spec_;
  ref.args.insert(ref.args.end(), {"--metrics-file", dir_ + "/ref{rank}.jsonl"});
  RankRun r0 = launch_ranks(ref);
  ASSERT_EQ(r0.exit_codes, (std::vector<int>{0, 0})) << r0.stderr_text[0] << r0.stderr_text[1];
  const auto want = global_losses(dir_ + "/ref0.jsonl");
  ASSERT_EQ(want.size(), 500u);  // 4000 samples / (2 ranks x 4 x 2) x 2 epochs

  LaunchOptions o;
  o.world = 2;
  o.args = spec_;
  o.args.insert(o.args.end(),
                {"--run-dir", dir_ + "/run", "--metrics-file", dir_ + "/part{rank}.jsonl"});
  o.while_running = [&](const std::vector<int>& pids) {
    if (last_step(dir_ + "/part0.jsonl") < 100) return false;
    ::kill(pids[0], SIGTERM);
    return true;
  };
  RankRun r1 = launch_ranks(o);
  ASSERT_EQ(r1.exit_codes, (std::vector<int>{0, 0})) << r1.stderr_text[0] << r1.stderr_text[1];
  const std::int64_t stop = last_step(dir_ + "/part0.jsonl");
  ASSERT_GE(stop, 100);
  ASSERT_LT(stop, 500) << "the run finished before the stop arrived";
  const std::string model = dir_ + "/run/model.pt";
  ASSERT_TRUE(std::filesystem::exists(model)) << "no model.pt next to the stop's checkpoint";
  const auto stopped_model_time = std::filesystem::last_write_time(model);

  LaunchOptions res;
  res.world = 2;
  res.args = spec_;
  res.args.insert(res.args.end(), {"--run-dir", dir_ + "/run", "--resume", dir_ + "/run",
                                   "--metrics-file", dir_ + "/rest{rank}.jsonl"});
  RankRun r2 = launch_ranks(res);
  ASSERT_EQ(r2.exit_codes, (std::vector<int>{0, 0})) << r2.stderr_text[0];
  const auto steps = read_messages(dir_ + "/rest0.jsonl", "step");
  ASSERT_EQ(steps.size(), 500u - stop);
  for (const auto& s : steps) {
    const std::int64_t k = s["step"];
    EXPECT_EQ(s["global_loss"].get<double>(), want[k - 1]) << "step " << k;
  }
  EXPECT_NE(std::filesystem::last_write_time(model), stopped_model_time)
      << "the finished run did not rewrite model.pt";
}

}  // namespace

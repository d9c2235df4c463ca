// Faults inside a run of real workers: a rank killed with SIGKILL mid-run must not leave the
// others hanging (they fail fast naming the dead rank), and a non-finite loss stops the run with
// the step it happened at.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

void kill_a_rank_mid_run(const std::string& comm, int victim, std::int64_t at_step) {
  const std::string dir = temp_dir("kill");
  LaunchOptions o;
  o.world = 3;
  o.args = {"--task",
            "seed",
            "--dataset-size",
            "30000",
            "--epochs",
            "3",
            "--batch-size",
            "4",
            "--metrics-file",
            dir + "/m{rank}.jsonl",
            "--collective-timeout",
            "120",
            "--run-dir",
            dir + "/run"};
  o.env = {{"DDPDESK_COMM", comm}};
  o.timeout_s = 240;  // beyond the collective timeout: a hang would show as a time-out
  const std::string watched = dir + "/m" + std::to_string(victim == 0 ? 1 : 0) + ".jsonl";
  std::chrono::steady_clock::time_point killed_at{};
  o.while_running = [&](const std::vector<int>& pids) {
    if (last_step(watched) < at_step) return false;
    ::kill(pids[victim], SIGKILL);
    killed_at = std::chrono::steady_clock::now();
    return true;
  };
  RankRun r = launch_ranks(o);
  ASSERT_FALSE(r.timed_out) << comm << ": survivors hung";
  ASSERT_NE(killed_at, std::chrono::steady_clock::time_point{}) << "the run ended before the kill";
  // From the kill to the last survivor's exit: the peers must notice the death itself, not wait
  // out the 120 s collective timeout (launch and training time are not part of it).
  double kill_to_exit = 0;
  for (int k = 0; k < o.world; ++k)
    if (k != victim)
      kill_to_exit =
          std::max(kill_to_exit, std::chrono::duration<double>(r.exited_at[k] - killed_at).count());
  std::printf("%s: survivors exited %.3f s after rank %d was killed\n", comm.c_str(), kill_to_exit,
              victim);
  std::fflush(stdout);  // forked ranks would repeat what is still buffered
  EXPECT_EQ(r.exit_codes[victim], 128 + SIGKILL);
  for (int k = 0; k < o.world; ++k) {
    if (k == victim) continue;
    EXPECT_EQ(r.exit_codes[k], 1) << comm << " rank " << k << ": " << r.stderr_text[k];
    if (comm == "shm") {  // shared memory knows exactly who is missing
      EXPECT_NE(r.stderr_text[k].find("rank " + std::to_string(victim)), std::string::npos)
          << r.stderr_text[k];
    }
    EXPECT_FALSE(process_alive(r.pids[k]));
    // The run directory says what happened: each survivor's exit record, and none from the
    // killed rank.
    auto rec = exit_record(dir + "/run", k);
    ASSERT_TRUE(rec) << comm << " rank " << k << " wrote no exit record";
    EXPECT_EQ(rec->outcome, "failed");
    EXPECT_EQ(rec->exit_code, 1);
    EXPECT_EQ(rec->pid, r.pids[k]);
    EXPECT_FALSE(rec->reason.empty());
    if (comm == "shm") {
      EXPECT_NE(rec->reason.find("rank " + std::to_string(victim)), std::string::npos)
          << rec->reason;
    }
  }
  EXPECT_FALSE(exit_record(dir + "/run", victim)) << "a SIGKILLed rank cannot have written one";
  EXPECT_LT(kill_to_exit, 30) << comm << ": the collective timeout is 120 s";
}

}  // namespace

TEST(RankFaults, KilledRankFailsTheOthersFastWithSharedMemory) {
  // A random rank at a random step, several times; the draw is printed so a failure can be rerun.
  std::random_device rd;
  std::mt19937 rng(rd());
  for (int round = 0; round < 3; ++round) {
    const int victim = static_cast<int>(rng() % 3);
    // Anywhere in the first epoch's first 400 steps (2,500 in the epoch): three ranks share two
    // cores here, so each step further costs the suite time and finds nothing new.
    const std::int64_t step = 20 + static_cast<std::int64_t>(rng() % 380);
    SCOPED_TRACE("victim rank " + std::to_string(victim) + " at step " + std::to_string(step));
    kill_a_rank_mid_run("shm", victim, step);
  }
}

TEST(RankFaults, KilledRankFailsTheOthersFastWithGloo) {
  kill_a_rank_mid_run("gloo", 2, 200);
}

TEST(RankFaults, NonFiniteLossStopsTheRunAtThatStep) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  const std::string dir = temp_dir("nan");
  LaunchOptions o;
  o.world = 2;
  o.args = {"--task",    "seed",      "--epochs", "2", "--metrics-file", dir + "/m{rank}.jsonl",
            "--run-dir", dir + "/run"};
  o.env = {{"DDPDESK_FAULT_NAN_AT_STEP", "37"}};
  RankRun r = launch_ranks(o);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(r.exit_codes[k], 1);
    EXPECT_NE(r.stderr_text[k].find("non-finite loss at step 37"), std::string::npos)
        << r.stderr_text[k];
    auto errors = read_messages(dir + "/m" + std::to_string(k) + ".jsonl", "error");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0]["message"].get<std::string>().find("step 37"), std::string::npos);
    EXPECT_EQ(last_step(dir + "/m" + std::to_string(k) + ".jsonl"), 37);
    auto rec = exit_record(dir + "/run", k);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->outcome, "failed");
    EXPECT_EQ(rec->step, 37);
    EXPECT_NE(rec->reason.find("non-finite loss at step 37"), std::string::npos) << rec->reason;
  }
}

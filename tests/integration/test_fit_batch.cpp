// A micro-batch that fits (--fit-batch) and an out-of-memory in training, on CPU through the
// test-only fault DDPDESK_FAULT_OOM_ABOVE (a forward on more samples fails as a CUDA
// out-of-memory would): the fitted run loses exactly what the run as asked loses; an
// out-of-memory names the rank and the micro-batch, leaves the last good step's checkpoint, and
// a resume from it finishes the run as the uninterrupted one would have; under the monitor
// (`ddpdesk --headless`) the out-of-memory is the run's cause.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "rank_launcher.h"
#include "shell_text.h"

using namespace ddpdesk::test;

namespace {

// World 2, seed task, 960 samples: 480 per rank in windows of 16 x 2 = 32, 15 optimizer steps.
LaunchOptions asked_run(const std::string& metrics) {
  LaunchOptions o;
  o.world = 2;
  o.args = {"--task",         "seed", "--dataset-size", "960", "--batch-size", "16",
            "--accum-steps",  "2",    "--epochs",       "1",   "--lr",         "1e-3",
            "--metrics-file", metrics};
  return o;
}

// The run as asked, without faults: the reference every case compares with (launched once).
const std::vector<nlohmann::json>& reference_steps() {
  static const std::vector<nlohmann::json> steps = [] {
    const std::string dir = temp_dir("fit-ref");
    RankRun r = launch_ranks(asked_run(dir + "/m{rank}.jsonl"));
    EXPECT_FALSE(r.timed_out);
    for (int k = 0; k < 2; ++k) EXPECT_EQ(r.exit_codes[k], 0) << r.stderr_text[k];
    return read_messages(dir + "/m0.jsonl", "step");
  }();
  return steps;
}

// `got` holds steps `from` to the last (or to `until`) with the reference's global loss and
// sample count at each.
void expect_reference_losses(const std::vector<nlohmann::json>& got, std::size_t from,
                             std::size_t until = 15) {
  const auto& want = reference_steps();
  ASSERT_EQ(want.size(), 15u);
  ASSERT_EQ(got.size(), until - from + 1);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const nlohmann::json& w = want[i + from - 1];
    EXPECT_EQ(got[i]["step"], w["step"]);
    EXPECT_EQ(got[i]["samples"], w["samples"]) << "step " << w["step"];
    const double loss = w["global_loss"];
    EXPECT_NEAR(got[i]["global_loss"].get<double>(), loss, 1e-5 * std::fabs(loss))
        << "step " << w["step"];
  }
}

std::string started_detail(const std::string& metrics) {
  const auto started = read_messages(metrics, "event");
  for (const auto& e : started)
    if (e["event"] == "started") return e.value("detail", "");
  return "(no started event)";
}

}  // namespace

TEST(FitBatch, FittedRunLosesExactlyWhatTheAskedRunLoses) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  // Only rank 1 is short of memory: more than 5 samples fail there. Of the sizes tried (16, 8,
  // 4, 2, 1: the divisors of 32 up to 16), rank 0 fits 16 and rank 1 fits 4; they agree on 4.
  const std::string dir = temp_dir("fit");
  LaunchOptions o = asked_run(dir + "/m{rank}.jsonl");
  o.args.push_back("--fit-batch");
  o.env = {{"DDPDESK_FAULT_OOM_ABOVE", "5:1"}};
  RankRun r = launch_ranks(o);
  ASSERT_FALSE(r.timed_out);
  const std::string line = "micro-batch 4 × 8 accumulation steps fits (asked 16 × 2)";
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(r.exit_codes[k], 0) << r.stderr_text[k];
    EXPECT_EQ(started_detail(dir + "/m" + std::to_string(k) + ".jsonl"), line);
  }
  EXPECT_NE(r.stderr_text[0].find("ddpdesk-worker[0] " + line), std::string::npos)
      << r.stderr_text[0];
  EXPECT_NE(r.stdout_text[0].find(" batch=4 accum=8 "), std::string::npos) << r.stdout_text[0];
  expect_reference_losses(read_messages(dir + "/m0.jsonl", "step"), 1);
  // Each rank's own window loss too: the two ranks' mean is the global loss.
  const auto s0 = read_messages(dir + "/m0.jsonl", "step");
  const auto s1 = read_messages(dir + "/m1.jsonl", "step");
  ASSERT_EQ(s0.size(), s1.size());
  for (std::size_t i = 0; i < s0.size(); ++i) {
    const double want = reference_steps()[i]["global_loss"];
    const double own = (s0[i]["loss"].get<double>() + s1[i]["loss"].get<double>()) / 2;
    EXPECT_NEAR(own, want, 1e-5 * std::fabs(want)) << "step " << i + 1;
  }
}

TEST(FitBatch, OutOfMemoryLeavesTheLastGoodCheckpointAndAResumeFinishes) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  // Rank 1 runs out of memory on micro-batches above 8 samples from step 6 on.
  const std::string dir = temp_dir("oom");
  LaunchOptions o = asked_run(dir + "/m{rank}.jsonl");
  o.args.insert(o.args.end(), {"--run-dir", dir + "/run"});
  o.env = {{"DDPDESK_FAULT_OOM_ABOVE", "8:1:6"}};
  RankRun r = launch_ranks(o);
  ASSERT_FALSE(r.timed_out);
  const std::string line =
      "out of memory on rank 1 in a micro-batch of 16 samples (step 6); checkpoint of step 5 "
      "written; try --fit-batch or a smaller --batch-size";
  EXPECT_EQ(r.exit_codes[1], 3);  // out of memory: its own exit code (no restart helps)
  EXPECT_NE(r.stderr_text[1].find("ddpdesk-worker[1] error: " + line + "\n"), std::string::npos)
      << r.stderr_text[1];
  EXPECT_EQ(r.exit_codes[0], 1) << "rank 0 cannot go on without rank 1: " << r.stderr_text[0];
  const auto errors = read_messages(dir + "/m1.jsonl", "error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["message"], line);
  const std::string checkpoint = dir + "/run/checkpoints/step-00000005.pt";
  EXPECT_TRUE(std::filesystem::exists(checkpoint));
  auto rec = exit_record(dir + "/run", 1);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->outcome, "failed");
  EXPECT_EQ(rec->reason, line);
  EXPECT_EQ(rec->step, 5);
  EXPECT_EQ(rec->checkpoint, checkpoint);
  EXPECT_EQ(last_step(dir + "/m0.jsonl"), 5);
  expect_reference_losses(read_messages(dir + "/m0.jsonl", "step"), 1, 5);

  // The resume, still short of memory, fits its micro-batch again (8 x 4) and finishes with the
  // steps the uninterrupted run took.
  LaunchOptions resumed = asked_run(dir + "/r{rank}.jsonl");
  resumed.args.insert(resumed.args.end(),
                      {"--run-dir", dir + "/run2", "--resume", dir + "/run", "--fit-batch"});
  resumed.env = o.env;
  RankRun rr = launch_ranks(resumed);
  ASSERT_FALSE(rr.timed_out);
  for (int k = 0; k < 2; ++k) ASSERT_EQ(rr.exit_codes[k], 0) << rr.stderr_text[k];
  EXPECT_EQ(
      started_detail(dir + "/r0.jsonl"),
      "resumed from " + checkpoint + "; micro-batch 8 × 4 accumulation steps fits (asked 16 × 2)");
  expect_reference_losses(read_messages(dir + "/r0.jsonl", "step"), 6);
}

TEST(FitBatch, EveryRankOutOfMemoryWritesOneGoodCheckpoint) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  // Both ranks fail in the same micro-batch and both write step 3's checkpoint, each through a
  // temporary file of its own: the file is whole (a resume loads it and finishes).
  const std::string dir = temp_dir("oom-all");
  LaunchOptions o = asked_run(dir + "/m{rank}.jsonl");
  o.args.insert(o.args.end(), {"--run-dir", dir + "/run"});
  o.env = {{"DDPDESK_FAULT_OOM_ABOVE", "8:*:4"}};
  RankRun r = launch_ranks(o);
  ASSERT_FALSE(r.timed_out);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(r.exit_codes[k], 3);
    EXPECT_NE(r.stderr_text[k].find("out of memory on rank " + std::to_string(k) +
                                    " in a micro-batch of 16 samples (step 4); checkpoint of "
                                    "step 3 written"),
              std::string::npos)
        << r.stderr_text[k];
  }
  LaunchOptions resumed = asked_run(dir + "/r{rank}.jsonl");
  resumed.args.insert(resumed.args.end(), {"--run-dir", dir + "/run2", "--resume", dir + "/run"});
  RankRun rr = launch_ranks(resumed);
  ASSERT_FALSE(rr.timed_out);
  for (int k = 0; k < 2; ++k) ASSERT_EQ(rr.exit_codes[k], 0) << rr.stderr_text[k];
  expect_reference_losses(read_messages(dir + "/r0.jsonl", "step"), 4);
}

TEST(FitBatch, NotEvenOneSampleFitsFailsWithOneLine) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  const std::string dir = temp_dir("fit-none");
  LaunchOptions o = asked_run(dir + "/m{rank}.jsonl");
  o.args.push_back("--fit-batch");
  o.env = {{"DDPDESK_FAULT_OOM_ABOVE", "0:1"}};  // every forward on rank 1 fails
  RankRun r = launch_ranks(o);
  ASSERT_FALSE(r.timed_out);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(r.exit_codes[k], 1);
    // Both ranks name rank 1: the agreement tells rank 0 too.
    EXPECT_NE(r.stderr_text[k].find("error: out of memory on rank 1 even in a micro-batch of 1 "
                                    "sample (--fit-batch)"),
              std::string::npos)
        << r.stderr_text[k];
    EXPECT_TRUE(read_messages(dir + "/m" + std::to_string(k) + ".jsonl", "step").empty());
  }
}

TEST(FitBatch, AskedMicroBatchIsKeptWhenItFits) {
  // Nothing above 16 samples fails: the micro-batch asked for fits and is kept.
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  const std::string dir = temp_dir("fit-off");
  LaunchOptions o = asked_run(dir + "/m{rank}.jsonl");
  o.args.push_back("--fit-batch");
  o.env = {{"DDPDESK_FAULT_OOM_ABOVE", "16"}};
  RankRun r = launch_ranks(o);
  ASSERT_FALSE(r.timed_out);
  for (int k = 0; k < 2; ++k) ASSERT_EQ(r.exit_codes[k], 0) << r.stderr_text[k];
  EXPECT_EQ(started_detail(dir + "/m0.jsonl"),
            "micro-batch 16 × 2 accumulation steps fits (asked 16 × 2)");
  expect_reference_losses(read_messages(dir + "/m0.jsonl", "step"), 1);
}

#ifdef DDPDESK_BIN
TEST(FitBatch, UnderTheMonitorTheOutOfMemoryIsTheRunsCause) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  // Rank 1's out-of-memory, not rank 0's failure that follows from it ("rank 1 died"), is what
  // the monitor says the run failed of: in headless's last line and in status.json. Restarts
  // asked for do not run it out of memory again: without --fit-batch the run ends, saying why.
  const std::string dir = temp_dir("oom-headless");
  const std::string cmd =
      "XDG_DATA_HOME=" + quoted(dir + "/data") + " DDPDESK_WORKER=" + quoted(worker_path()) +
      " DDPDESK_FAULT_OOM_ABOVE=8:1:6 " + quoted(DDPDESK_BIN) +
      " --headless --nproc 2 --task seed --dataset-size 960 --batch-size 16 --accum-steps 2"
      " --epochs 1 --max-restarts 2 >" +
      quoted(dir + "/headless.out") + " 2>" + quoted(dir + "/headless.err");
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  const std::string err = read_text(dir + "/headless.err");
  EXPECT_EQ(WEXITSTATUS(status), 1) << err;
  const std::string cause =
      "rank 1 exited with code 3: out of memory on rank 1 in a micro-batch of 16 samples (step "
      "6); checkpoint of step 5 written; try --fit-batch or a smaller --batch-size";
  EXPECT_NE(err.find("run failed: " + cause), std::string::npos) << err;
  EXPECT_NE(err.find("no restart: rank 1 ran out of memory and would again at this micro-batch "
                     "(--fit-batch fits one)"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("restart 1 of 2"), std::string::npos) << err;
  const std::string runs = dir + "/data/ddpdesk/runs";
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(runs)) dirs.push_back(e.path());
  ASSERT_EQ(dirs.size(), 1u);
  const auto status_json = nlohmann::json::parse(read_text(dirs[0] / "status.json"));
  EXPECT_EQ(status_json["state"], "Failed");
  EXPECT_EQ(status_json["reason"].get<std::string>().rfind(cause, 0), 0u) << status_json;
  EXPECT_TRUE(std::filesystem::exists(dirs[0] / "checkpoints/step-00000005.pt"));
}

TEST(FitBatch, UnderTheMonitorTheFittedMicroBatchIsInTheSummary) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  // The monitor reads the fit from the ranks' `started` events: headless's summary says it.
  const std::string dir = temp_dir("fit-headless");
  const std::string cmd =
      "XDG_DATA_HOME=" + quoted(dir + "/data") + " DDPDESK_WORKER=" + quoted(worker_path()) +
      " DDPDESK_FAULT_OOM_ABOVE=5:1 " + quoted(DDPDESK_BIN) +
      " --headless --nproc 2 --task seed --dataset-size 960 --batch-size 16 --accum-steps 2"
      " --epochs 1 --fit-batch >" +
      quoted(dir + "/headless.out") + " 2>" + quoted(dir + "/headless.err");
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_text(dir + "/headless.err");
  const std::string out = read_text(dir + "/headless.out");
  EXPECT_NE(out.find("\nstarted: micro-batch 4 × 8 accumulation steps fits (asked 16 × 2)\n"),
            std::string::npos)
      << out;
}
#endif

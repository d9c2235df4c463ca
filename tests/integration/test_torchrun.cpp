// ddpdesk-worker under Debian's torchrun (python3 -m torch.distributed.run, static rendezvous
// with the agent's store): both ranks train and agree; the user's TorchScript task trains under
// torchrun exactly as under ddpdesk's own launch.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

bool have_torchrun() {
  return std::system("/usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null") == 0;
}

// Runs the worker on two ranks under torchrun; `worker_args` end with a metrics file whose path
// holds "{rank}" (the worker substitutes it). Returns the shell's status.
int run_torchrun(const std::string& dir, const std::string& worker_args) {
  // TMPDIR: torchrun keeps its agent's logs in a torchelastic_* directory of its own under the
  // temporary directory and leaves it there; in `dir` it goes when the test's directories do.
  const std::string cmd = "cd " + dir + " && TMPDIR=" + dir +
                          " timeout 300 /usr/bin/python3 -m torch.distributed.run --redirects 2 "
                          "--tee 2 --no_python --nproc_per_node 2 --master_port " +
                          std::to_string(free_port()) + " " + worker_path() + " " + worker_args +
                          " > " + dir + "/out.txt 2>&1";
  return std::system(cmd.c_str());
}

// Starts torchrun (its own process group, output to <dir>/out.txt, working in `dir`) with
// `options` and the worker's `args`, `env` added; returns its pid, without waiting.
// (--redirects/--tee: without them this torchrun fails at start on a None it maps.)
pid_t start_torchrun(const std::string& dir, const std::vector<std::string>& options,
                     const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::vector<std::string> argv = {"python3",
                                   "-m",
                                   "torch.distributed.run",
                                   "--redirects",
                                   "2",
                                   "--tee",
                                   "2",
                                   "--no_python",
                                   "--nproc_per_node",
                                   "2",
                                   "--master_port",
                                   std::to_string(free_port())};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(worker_path());
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out = dir + "/out.txt";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::chdir(dir.c_str());
    ::setenv("TMPDIR", dir.c_str(), 1);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    ::execv("/usr/bin/python3", c.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for torchrun until `deadline`; past it, kills its process group. Its wait status, or -1
// when it had to be killed.
int end_torchrun(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return status;
}

std::vector<double> global_losses(const std::string& metrics_file) {
  std::vector<double> out;
  for (const auto& s : read_messages(metrics_file, "step")) out.push_back(s["global_loss"]);
  return out;
}

}  // namespace

TEST(Torchrun, TwoRanksUnderTorchrun) {
  if (!have_torchrun())
    GTEST_FAIL() << "python3-torch is missing: scripts/install-deps.sh installs it";
  const std::string dir = temp_dir("torchrun");
  ASSERT_EQ(run_torchrun(dir, "--task seed --epochs 1 --dataset-size 400 --metrics-file " + dir +
                                  "/m{rank}.jsonl"),
            0)
      << "see " << dir << "/out.txt";
  auto steps = read_messages(dir + "/m0.jsonl", "step");
  for (const auto& s : read_messages(dir + "/m1.jsonl", "step")) steps.push_back(s);
  ASSERT_EQ(steps.size(),
            2u * 50u);  // each rank wrote every step to its own file ({rank} in the path)
  std::map<std::int64_t, double> by_step;
  for (const auto& s : steps) {
    const std::int64_t k = s["step"];
    if (by_step.count(k)) {
      EXPECT_EQ(by_step[k], s["global_loss"].get<double>());
    }
    by_step[k] = s["global_loss"];
  }
  EXPECT_EQ(steps.front()["samples"], 8);
}

// The user task (a scripted model with dropout, so each rank's random stream matters) under
// torchrun gives bit for bit the step losses of the same run launched by ddpdesk's own launcher:
// torchrun's rank variables place every rank where the local launch does.
TEST(Torchrun, UserTaskUnderTorchrunEqualsTheLocalLaunch) {
  if (!have_torchrun())
    GTEST_FAIL() << "python3-torch is missing: scripts/install-deps.sh installs it";
  const std::string dir = temp_dir("torchrun-user");
  const std::string make =
      "/usr/bin/python3 " DDPDESK_SOURCE_DIR "/examples/make_user_task.py --out " + dir +
      "/task --data synthetic --model small --dropout 0.2 > " + dir + "/make.txt 2>&1";
  ASSERT_EQ(std::system(make.c_str()), 0) << "see " << dir << "/make.txt";
  const std::vector<std::string> spec = {"--task",        "script",
                                         "--model",       dir + "/task/model.pt",
                                         "--train-data",  dir + "/task/train.safetensors",
                                         "--batch-size",  "8",
                                         "--accum-steps", "2",
                                         "--epochs",      "1",
                                         "--seed",        "5"};
  std::string args;
  for (const auto& a : spec) args += a + " ";
  ASSERT_EQ(run_torchrun(dir, args + "--metrics-file " + dir + "/t{rank}.jsonl"), 0)
      << "see " << dir << "/out.txt";

  LaunchOptions local;
  local.world = 2;
  local.args = spec;
  local.args.insert(local.args.end(), {"--metrics-file", dir + "/l{rank}.jsonl"});
  const RankRun r = launch_ranks(local);
  ASSERT_EQ(r.exit_codes, (std::vector<int>{0, 0})) << r.stderr_text[0] << r.stderr_text[1];

  const auto under_torchrun = global_losses(dir + "/t0.jsonl");
  ASSERT_GE(under_torchrun.size(), 5u);
  EXPECT_EQ(under_torchrun, global_losses(dir + "/t1.jsonl"));
  EXPECT_EQ(under_torchrun, global_losses(dir + "/l0.jsonl"));
}

// torchrun's own stop: SIGTERM to torchrun, which sends SIGTERM to every rank (its agent's
// close). Every rank stops at one step with exit 0 and its exit record, and rank 0 leaves a
// checkpoint: the end a torchrun user sees is ddpdesk's graceful stop, not a killed rank.
TEST(Torchrun, SigtermToTorchrunStopsEveryRankWithACheckpoint) {
  if (!have_torchrun())
    GTEST_FAIL() << "python3-torch is missing: scripts/install-deps.sh installs it";
  const std::string dir = temp_dir("torchrun-stop");
  const std::string run_dir = dir + "/run";
  const std::string out = dir + "/out.txt";
  // 20000 steps an epoch: far from done when the signal comes.
  const pid_t pid =
      start_torchrun(dir, {},
                     {"--task", "seed", "--dataset-size", "80000", "--batch-size", "2", "--epochs",
                      "1", "--run-dir", run_dir, "--metrics-file", dir + "/m{rank}.jsonl"});
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  bool training = false;
  while (!training && std::chrono::steady_clock::now() < deadline) {
    training = last_step(dir + "/m0.jsonl") >= 20 && last_step(dir + "/m1.jsonl") >= 20;
    if (!training) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (training) ::kill(pid, SIGTERM);
  if (end_torchrun(pid, deadline) == -1) FAIL() << "torchrun did not end; see " << out;
  ASSERT_TRUE(training) << "the ranks never trained; see " << out;
  const std::int64_t total = 40000;  // steps of the whole run
  std::int64_t stopped_at = -1;
  int signalled = 0;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto rec = exit_record(run_dir, rank);
    ASSERT_TRUE(rec) << "no exit record: the rank was killed; see " << out;
    EXPECT_EQ(rec->outcome, "stopped");
    EXPECT_EQ(rec->exit_code, 0);
    // torchrun signals its ranks one after the other: a rank may have stopped on the first
    // one's vote before its own SIGTERM came (then it names no signal).
    EXPECT_TRUE(rec->stop_signal == "SIGTERM" || rec->stop_signal.empty()) << rec->stop_signal;
    signalled += rec->stop_signal == "SIGTERM";
    EXPECT_GE(rec->step, 20);
    EXPECT_LT(rec->step, total);
    if (stopped_at >= 0) EXPECT_EQ(rec->step, stopped_at) << "the ranks stopped apart";
    stopped_at = rec->step;
    if (rank == 0) {
      ASSERT_FALSE(rec->checkpoint.empty());
      EXPECT_TRUE(std::filesystem::exists(rec->checkpoint));
    }
  }
  EXPECT_GE(signalled, 1) << "no rank says it was stopped by torchrun's SIGTERM";
}

// torchrun --max_restarts: a rank killed mid-run makes torchrun start every rank again, and the
// restarted worker continues from the newest checkpoint of its run directory (its restart count
// tells it), so every step recorded after the restart is bitwise the uninterrupted run's and the
// run ends with exit 0 (torchrun alone would start a script from scratch).
TEST(Torchrun, MaxRestartsResumeFromTheCheckpointExactly) {
  if (!have_torchrun())
    GTEST_FAIL() << "python3-torch is missing: scripts/install-deps.sh installs it";
  const std::string spec = "--task seed --epochs 2 --batch-size 4 --accum-steps 2 --seed 3 ";
  const std::string ref = temp_dir("torchrun-restart-ref");
  ASSERT_EQ(run_torchrun(ref, spec + "--metrics-file " + ref + "/m{rank}.jsonl"), 0)
      << "see " << ref << "/out.txt";
  std::map<std::int64_t, double> uninterrupted;
  for (const auto& s : read_messages(ref + "/m0.jsonl", "step"))
    uninterrupted[s["step"].get<std::int64_t>()] = s["global_loss"].get<double>();
  ASSERT_EQ(uninterrupted.size(), 114u);  // 900 samples, 16 a step (the last one 4): 57 an epoch

  const std::string dir = temp_dir("torchrun-restart");
  const std::string out = dir + "/out.txt";
  const pid_t pid =
      start_torchrun(dir, {"--max_restarts", "1"},
                     {"--task", "seed", "--epochs", "2", "--batch-size", "4", "--accum-steps", "2",
                      "--seed", "3", "--checkpoint-every", "5", "--run-dir", dir + "/run",
                      "--metrics-file", dir + "/m{rank}.jsonl"},
                     {{"DDPDESK_FAULT_SLOW_RANK", "0:15"}});  // seconds long: killed mid-run
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  std::int64_t victim = 0;
  while (victim == 0 && std::chrono::steady_clock::now() < deadline) {
    if (last_step(dir + "/m1.jsonl") >= 12) {
      const auto hello = read_messages(dir + "/m1.jsonl", "hello");
      if (!hello.empty()) victim = hello.front()["pid"].get<std::int64_t>();
    }
    if (victim == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (victim > 0) ::kill(pid_t(victim), SIGKILL);
  const int status = end_torchrun(pid, deadline);
  if (status == -1) FAIL() << "torchrun did not end; see " << out;
  ASSERT_GT(victim, 0) << "rank 1 never trained; see " << out;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "see " << out;

  // The restarted attempt resumed (not from step 0) and recorded every step to the end, each
  // the uninterrupted run's loss.
  bool resumed = false;
  for (const auto& e : read_messages(dir + "/m0.jsonl", "event"))
    resumed |= e["event"] == "started" && e.value("detail", "").rfind("resumed from", 0) == 0;
  EXPECT_TRUE(resumed) << "see " << out;
  std::map<std::int64_t, double> last;
  for (const auto& s : read_messages(dir + "/m0.jsonl", "step"))
    last[s["step"].get<std::int64_t>()] = s["global_loss"].get<double>();
  ASSERT_FALSE(last.empty());
  EXPECT_EQ(last.rbegin()->first, 114);
  for (const auto& [step, loss] : last) EXPECT_EQ(loss, uninterrupted.at(step)) << "step " << step;
}

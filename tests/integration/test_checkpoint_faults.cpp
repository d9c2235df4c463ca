// Checkpoints under faults, and start-up faults, with real workers: a rank killed half-way
// through writing a checkpoint leaves the previous one loadable (and resuming from it continues
// exactly); periodic checkpoints keep only the newest few; a taken port or a missing data set
// fail with a clear message and nothing left running.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "rank_launcher.h"

using namespace ddpdesk::test;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSpec = {"--task",       "seed", "--dataset-size", "4000",
                                        "--batch-size", "4",    "--epochs",       "1"};

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST(CheckpointFaults, KilledWhileWritingKeepsThePreviousCheckpointAndResumesExactly) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  const std::string base = temp_dir("ckfault");
  LaunchOptions ref;
  ref.world = 2;
  ref.args = kSpec;
  ref.args.insert(ref.args.end(), {"--metrics-file", base + "/ref{rank}.jsonl"});
  RankRun r0 = launch_ranks(ref);
  ASSERT_EQ(r0.exit_codes, (std::vector<int>{0, 0}));
  const auto want = read_messages(base + "/ref0.jsonl", "step");
  ASSERT_EQ(want.size(), 500u);

  LaunchOptions o = ref;
  o.args = kSpec;
  o.args.insert(o.args.end(),
                {"--run-dir", base + "/run", "--checkpoint-every", "100", "--metrics-file",
                 base + "/crash{rank}.jsonl", "--collective-timeout", "30"});
  o.env = {{"DDPDESK_FAULT_KILL_IN_CHECKPOINT", "200"}};
  RankRun r1 = launch_ranks(o);
  EXPECT_EQ(r1.exit_codes[0], 128 + SIGKILL);
  EXPECT_EQ(r1.exit_codes[1], 1) << r1.stderr_text[1];
  const auto files = files_in(base + "/run/checkpoints");
  ASSERT_EQ(files.size(), 2u) << "expected step 100 and a torn temporary file";
  EXPECT_EQ(files[0], "step-00000100.pt");
  EXPECT_NE(files[1].find(".tmp-"), std::string::npos) << files[1];
  EXPECT_FALSE(exit_record(base + "/run", 0)) << "rank 0 was killed: no record";
  auto survivor = exit_record(base + "/run", 1);
  ASSERT_TRUE(survivor);
  EXPECT_EQ(survivor->outcome, "failed");
  EXPECT_EQ(survivor->step, 200);

  LaunchOptions res = ref;
  res.args = kSpec;
  res.args.insert(res.args.end(), {"--run-dir", base + "/run", "--resume", base + "/run",
                                   "--metrics-file", base + "/rest{rank}.jsonl"});
  RankRun r2 = launch_ranks(res);
  ASSERT_EQ(r2.exit_codes, (std::vector<int>{0, 0})) << r2.stderr_text[0];
  const auto steps = read_messages(base + "/rest0.jsonl", "step");
  ASSERT_EQ(steps.size(), 400u);
  for (const auto& s : steps) {
    const std::int64_t k = s["step"];
    EXPECT_EQ(s["global_loss"], want[k - 1]["global_loss"]) << "step " << k;
  }
  for (int k = 0; k < 2; ++k) {  // the resumed run replaced the failed run's records
    auto rec = exit_record(base + "/run", k);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->outcome, "finished");
    EXPECT_EQ(rec->step, 500);
    EXPECT_EQ(rec->pid, r2.pids[k]);
  }
  EXPECT_EQ(exit_record(base + "/run", 0)->checkpoint, base + "/run/checkpoints/step-00000500.pt");
}

TEST(CheckpointFaults, PeriodicCheckpointsKeepTheNewestFew) {
  const std::string base = temp_dir("ckkeep");
  LaunchOptions o;
  o.world = 2;
  o.args = kSpec;
  o.args.insert(o.args.end(),
                {"--run-dir", base, "--checkpoint-every", "60", "--keep-checkpoints", "2"});
  RankRun r = launch_ranks(o);
  ASSERT_EQ(r.exit_codes, (std::vector<int>{0, 0}));
  EXPECT_EQ(files_in(base + "/checkpoints"),
            (std::vector<std::string>{"step-00000480.pt", "step-00000500.pt"}));
}

TEST(StartupFaults, PortInUseFailsClearlyAndNothingHangs) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  LaunchOptions o;
  o.world = 2;
  const std::string dir = temp_dir("port");
  o.args = {"--epochs", "1", "--collective-timeout", "5", "--run-dir", dir};
  o.env = {{"MASTER_PORT", std::to_string(ntohs(a.sin_port))}};
  o.timeout_s = 90;
  RankRun r = launch_ranks(o);
  ::close(fd);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_codes[0], 1);
  EXPECT_NE(r.stderr_text[0].find("cannot host the rendezvous store at 127.0.0.1:"),
            std::string::npos)
      << r.stderr_text[0];
  EXPECT_NE(r.exit_codes[1], 0);
  EXPECT_FALSE(process_alive(r.pids[0]) || process_alive(r.pids[1]));
  auto rec = exit_record(dir, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->outcome, "failed");
  EXPECT_NE(rec->reason.find("rendezvous store"), std::string::npos) << rec->reason;
  EXPECT_TRUE(!std::filesystem::exists(dir + "/checkpoints") ||
              std::filesystem::is_empty(dir + "/checkpoints"));
}

TEST(StartupFaults, MissingDatasetNamesThePath) {
  LaunchOptions o;
  const std::string dir = temp_dir("nodata");
  o.args = {"--task", "fmnist-mlp", "--epochs", "1", "--run-dir", dir};
  o.env = {{"DDPDESK_FMNIST_DIR", "/nonexistent/fashion"}};
  RankRun r = launch_ranks(o);
  EXPECT_EQ(r.exit_codes[0], 1);
  EXPECT_NE(r.stderr_text[0].find("/nonexistent/fashion"), std::string::npos) << r.stderr_text[0];
  EXPECT_NE(r.stderr_text[0].find("dataset-fashion-mnist"), std::string::npos);
  auto rec = exit_record(dir, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->outcome, "failed");
  EXPECT_NE(rec->reason.find("/nonexistent/fashion"), std::string::npos) << rec->reason;
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoints"));
}

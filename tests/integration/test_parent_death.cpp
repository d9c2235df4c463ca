// The fault-table row "the window killed outright", with the real ddpdesk-worker: Linux sends a
// rank its parent-death signal again each time one of its dying parent's threads hands it on, so
// a monitor with many threads (the window) killed with SIGKILL sent its ranks two SIGTERMs, and
// the worker took the second as "exit at once": exit 143 in the middle of its checkpoint, the
// run lost. Here the parent is made to do exactly that, in order: it starts the rank from a
// thread of its own, lets that thread end (the kernel hands the rank to the parent's main thread:
// the first SIGTERM), then dies at once (the second). The rank must stop as once: checkpoint,
// exit 0, its exit record saying the monitor died.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "rank_launcher.h"

namespace fs = std::filesystem;
using namespace ddpdesk::test;

namespace {

// Started by the test: becomes the rank's parent, starts it from a thread, and dies as above.
// Returns only in the test process (the rank's pid, -1 on failure).
pid_t start_rank_through_dying_parent(const std::string& run_dir, const std::string& metrics) {
  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0) return -1;
  const pid_t parent = ::fork();
  if (parent < 0) return -1;
  if (parent > 0) {
    ::close(pipe_fd[1]);
    pid_t rank = -1;
    if (::read(pipe_fd[0], &rank, sizeof rank) != sizeof rank) rank = -1;
    ::close(pipe_fd[0]);
    ::waitpid(parent, nullptr, 0);
    return rank;
  }
  // The parent: only async-signal-safe work after the fork matters little here (a test child).
  ::close(pipe_fd[0]);
  const std::string port = std::to_string(free_port());
  const std::string worker = worker_path();
  pid_t rank = -1;
  std::thread starter([&] {
    rank = ::fork();
    if (rank == 0) {
      ::setenv("RANK", "0", 1);
      ::setenv("LOCAL_RANK", "0", 1);
      ::setenv("WORLD_SIZE", "1", 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      ::setenv("OMP_NUM_THREADS", "1", 1);
      // A monitor that is not listening: the rank trains on, and takes its parent's death as the
      // monitor's (PR_SET_PDEATHSIG).
      ::setenv("DDPDESK_MONITOR", (run_dir + "/no-monitor.sock").c_str(), 1);
      ::execl(worker.c_str(), worker.c_str(), "--task", "seed", "--batch-size", "4",
              "--dataset-size", "4000", "--epochs", "1000", "--log-interval", "1", "--run-dir",
              run_dir.c_str(), "--metrics-file", metrics.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Hand the rank over once it trains (its parent-death signal is set by then).
    for (int i = 0; i < 60000 && last_step(metrics) < 20; ++i) ::usleep(1000);
  });
  starter.join();  // the starting thread ends: the first SIGTERM
  [[maybe_unused]] ssize_t n = ::write(pipe_fd[1], &rank, sizeof rank);
  ::_exit(0);  // and the parent dies: the second
}

}  // namespace

TEST(ParentDeath, TwoParentDeathSignalsAreOneStop) {
  // The rank, orphaned, comes to this process (a subreaper) to be waited for.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const std::string dir = temp_dir("parent-death");
  const std::string run_dir = dir + "/run";
  const pid_t rank = start_rank_through_dying_parent(run_dir, dir + "/rank0.jsonl");
  ASSERT_GT(rank, 0);
  int status = 0;
  for (int i = 0; i < 120000; ++i) {  // up to two minutes
    if (::waitpid(rank, &status, WNOHANG) == rank) break;
    ::usleep(1000);
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  if (process_alive(rank)) {
    ::kill(rank, SIGKILL);
    FAIL() << "the rank did not stop";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "128 + 15: the repeat was taken as a second request";
  const auto rec = exit_record(run_dir, 0);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec->monitor_gone);
  EXPECT_EQ(rec->stop_signal, "SIGTERM");
  bool checkpoint = false;
  for (const auto& e : fs::directory_iterator(run_dir + "/checkpoints"))
    checkpoint = checkpoint || e.path().extension() == ".pt";
  EXPECT_TRUE(checkpoint);
}

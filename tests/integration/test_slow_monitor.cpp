// A monitor that never reads, or is not there at all, must not slow or stop training: the
// worker finishes, and its metrics file still has every message.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

// A listening socket whose connections are accepted by the kernel and then never read.
int silent_listener(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  ::listen(fd, 16);
  return fd;
}

void expect_complete_run(const std::string& monitor) {
  const std::string dir = temp_dir("slowmon");
  LaunchOptions o;
  o.world = 2;
  // 2 x 5000 steps of ~250-byte lines: far more than a socket buffer holds.
  o.args = {
      "--task", "seed",           "--dataset-size",      "8000", "--batch-size", "4", "--epochs",
      "5",      "--metrics-file", dir + "/m{rank}.jsonl"};
  o.env = {{"DDPDESK_MONITOR", monitor}, {"DDPDESK_TOKEN", "t"}};
  o.timeout_s = 120;
  RankRun r = launch_ranks(o);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_codes, (std::vector<int>{0, 0})) << r.stderr_text[0];
  for (int k = 0; k < 2; ++k) {
    const std::string f = dir + "/m" + std::to_string(k) + ".jsonl";
    EXPECT_EQ(read_messages(f, "step").size(), 5000u);
    EXPECT_EQ(read_messages(f, "event").back()["event"], "finished");
  }
}

}  // namespace

TEST(SlowMonitor, MonitorThatNeverReadsDoesNotStopTraining) {
  const std::string path = temp_dir("sock") + "/monitor.sock";
  int fd = silent_listener(path);
  ASSERT_GE(fd, 0);
  expect_complete_run(path);
  ::close(fd);
}

TEST(SlowMonitor, MissingMonitorDoesNotStopTraining) {
  expect_complete_run(temp_dir("nosock") + "/absent.sock");
}

// A monitor that never reads, or is not there at all, must not slow or stop training: the
// worker finishes, and its metrics file still has every message. "Not slowed" is measured by the
// ranks themselves: the share of their step time spent on telemetry (building and queueing
// messages, time_ms.telemetry in every step message) next to a one-way peer, the same run with
// no monitor at all, in the same test; a worker whose training thread waited on the socket
// would spend most of its step time there.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
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

// Runs two ranks against `monitor`, checks the run is complete, and returns the share of the
// ranks' step time that went to telemetry.
double complete_run_telemetry_share(const std::string& monitor) {
  const std::string dir = temp_dir("slowmon");
  LaunchOptions o;
  o.world = 2;
  // 2 x 3000 steps of ~250-byte lines (750 kB a rank): far more than a socket buffer holds.
  o.args = {
      "--task", "seed",           "--dataset-size",      "8000", "--batch-size", "4", "--epochs",
      "3",      "--metrics-file", dir + "/m{rank}.jsonl"};
  o.env = {{"DDPDESK_MONITOR", monitor}, {"DDPDESK_TOKEN", "t"}};
  o.timeout_s = 300;  // a loaded 2-core machine; a rank waiting on the socket never ends
  RankRun r = launch_ranks(o);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_codes, (std::vector<int>{0, 0})) << r.stderr_text[0];
  double telemetry_ms = 0, step_ms = 0;
  for (int k = 0; k < 2; ++k) {
    const std::string f = dir + "/m" + std::to_string(k) + ".jsonl";
    const auto steps = read_messages(f, "step");
    EXPECT_EQ(steps.size(), 3000u);
    const auto events = read_messages(f, "event");
    EXPECT_TRUE(!events.empty() && events.back()["event"] == "finished") << f;
    for (const auto& m : steps) {
      if (!m.contains("time_ms")) continue;
      const auto& t = m["time_ms"];
      const double n = t.value("steps", 0.0);
      telemetry_ms += t.value("telemetry", 0.0) * n;
      step_ms += t.value("step", 0.0) * n;
    }
  }
  EXPECT_GT(step_ms, 0) << "no step breakdown in the metrics files";
  return step_ms > 0 ? telemetry_ms / step_ms : 1.0;
}

}  // namespace

TEST(SlowMonitor, MonitorThatNeverReadsNeitherStopsNorSlowsTraining) {
  // The peer: no monitor at all (nothing to wait for).
  const double absent = complete_run_telemetry_share(temp_dir("nosock") + "/absent.sock");
  const std::string path = temp_dir("sock") + "/monitor.sock";
  int fd = silent_listener(path);
  ASSERT_GE(fd, 0);
  const double silent = complete_run_telemetry_share(path);
  ::close(fd);
  std::printf(
      "telemetry share of step time: %.1f %% with no monitor, %.1f %% with one that never "
      "reads\n",
      100 * absent, 100 * silent);
  // Three times the peer's share leaves room for a loaded machine; waiting on the socket, even
  // a millisecond a step, takes most of a step of this size.
  EXPECT_LT(silent, 3 * absent + 0.02);
}

// A monitor that never reads, or is not there at all, must not stop or hold up training: the ranks
// finish, their metrics files have every message, and what the socket could not take is dropped
// and counted (monitor_dropped in each rank's exit record), never waited for. Each rank writes far
// more than a socket buffer holds, so against a monitor that never reads its socket is full for
// most of the run: a training thread that waited on it would never finish (the launcher's timeout),
// and one whose sender dropped messages without counting them reports none dropped. Nothing here
// depends on how fast the machine is: a loaded one only takes longer.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

constexpr std::size_t kSteps = 3000;  // per rank: 2 x 3000 steps of ~250-byte lines

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

// What a Unix socket's sender may have in flight before it blocks (the default send buffer).
std::uintmax_t socket_buffer_bytes() {
  std::ifstream in("/proc/sys/net/core/wmem_default");
  std::uintmax_t n = 0;
  in >> n;
  return n > 0 ? n : 212992;
}

// Runs two ranks against `monitor` and checks the run is complete: both finished (exit 0, before
// the launcher's deadline) with every step in their metrics files. Returns the ranks' exit
// records' monitor_dropped, and each metrics file's size in *file_bytes.
std::vector<std::int64_t> complete_run(const std::string& monitor,
                                       std::vector<std::uintmax_t>* file_bytes) {
  const std::string dir = temp_dir("slowmon");
  LaunchOptions o;
  o.world = 2;
  o.args = {"--task",       "seed",       "--dataset-size", "8000",
            "--batch-size", "4",          "--epochs",       "3",
            "--run-dir",    dir + "/run", "--metrics-file", dir + "/m{rank}.jsonl"};
  o.env = {{"DDPDESK_MONITOR", monitor}, {"DDPDESK_TOKEN", "t"}};
  o.timeout_s = 300;  // a loaded 2-core machine; a rank waiting on the socket never ends
  RankRun r = launch_ranks(o);
  EXPECT_FALSE(r.timed_out) << "a rank was still running after " << o.timeout_s << " s";
  EXPECT_EQ(r.exit_codes, (std::vector<int>{0, 0})) << r.stderr_text[0] << r.stderr_text[1];
  std::vector<std::int64_t> dropped;
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE("rank " + std::to_string(k));
    const std::string f = dir + "/m" + std::to_string(k) + ".jsonl";
    const auto steps = read_messages(f, "step");
    EXPECT_EQ(steps.size(), kSteps);
    if (!steps.empty()) EXPECT_EQ(steps.back()["step"], static_cast<std::int64_t>(kSteps));
    const auto events = read_messages(f, "event");
    EXPECT_TRUE(!events.empty() && events.back()["event"] == "finished");
    std::error_code ec;
    file_bytes->push_back(std::filesystem::file_size(f, ec));
    const auto rec = exit_record(dir + "/run", k);
    EXPECT_TRUE(rec) << "no exit record";
    EXPECT_TRUE(rec && rec->outcome == "finished");
    dropped.push_back(rec ? rec->monitor_dropped : -1);
  }
  return dropped;
}

}  // namespace

TEST(SlowMonitor, MonitorThatIsNotThereNeitherStopsNorHoldsUpTraining) {
  std::vector<std::uintmax_t> bytes;
  complete_run(temp_dir("nosock") + "/absent.sock", &bytes);
}

TEST(SlowMonitor, MonitorThatNeverReadsNeitherStopsNorHoldsUpTraining) {
  const std::string path = temp_dir("sock") + "/monitor.sock";
  int fd = silent_listener(path);
  ASSERT_GE(fd, 0);
  std::vector<std::uintmax_t> bytes;
  const auto dropped = complete_run(path, &bytes);
  ::close(fd);
  std::printf("messages dropped for the monitor that never reads: rank 0 %lld, rank 1 %lld\n",
              static_cast<long long>(dropped.at(0)), static_cast<long long>(dropped.at(1)));
  // The socket was full: each rank wrote several times what its send buffer holds.
  const std::uintmax_t buffer = socket_buffer_bytes();
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE("rank " + std::to_string(k));
    ASSERT_GT(bytes.at(k), 2 * buffer)
        << "the run is too small to fill a socket buffer of " << buffer
        << " bytes (net.core.wmem_default): make it longer";
    // What the socket could not take was dropped and counted, not waited for.
    EXPECT_GT(dropped.at(k), 0) << "a full socket, yet no message counted as dropped";
  }
}

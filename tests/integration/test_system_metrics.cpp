// System gauges from a real ddpdesk-worker: a short seed run's metrics file holds cpu_percent,
// rss_bytes and threads gauges from every rank, with plausible values (a LibTorch process is
// tens of MB resident; CPU % between 0 and every core busy), on the training clock; the spec's
// system_interval 0 switches them off; a CPU rank sends no GPU gauges.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

std::vector<std::string> seedRun(const std::string& dir) {
  return {"--task",   "seed", "--dataset-size", "2000",
          "--epochs", "2",    "--metrics-file", dir + "/m{rank}.jsonl"};
}

}  // namespace

TEST(SystemMetrics, ARealRunSendsPlausibleSystemGauges) {
  const std::string dir = temp_dir("system");
  LaunchOptions o;
  o.world = 2;
  o.args = seedRun(dir);
  const RankRun r = launch_ranks(o);
  ASSERT_EQ(r.exit_codes, (std::vector<int>{0, 0})) << r.stderr_text[0] << r.stderr_text[1];
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  for (int rank = 0; rank < 2; ++rank) {
    const std::string file = dir + "/m" + std::to_string(rank) + ".jsonl";
    const auto gauges = read_messages(file, "gauge");
    const auto steps = read_messages(file, "step");
    ASSERT_FALSE(steps.empty());
    std::set<std::string> names;
    int cpu = 0, rss = 0;
    for (const auto& g : gauges) {
      const std::string name = g["name"];
      names.insert(name);
      EXPECT_EQ(g["rank"], rank);
      EXPECT_EQ(name.rfind("gpu_", 0), std::string::npos) << "a CPU rank: " << g.dump();
      const double v = g["value"];
      if (name == "cpu_percent") {
        ++cpu;
        EXPECT_EQ(g["unit"], "%");
        EXPECT_GE(v, 0.0) << g.dump();
        // Clock ticks are 10 ms: one tick of rounding over a short interval on top of all cores.
        EXPECT_LE(v, 100.0 * cores + 10.0) << g.dump();
      } else if (name == "rss_bytes") {
        ++rss;
        EXPECT_EQ(g["unit"], "B");
        EXPECT_GT(v, 10e6) << g.dump();
        EXPECT_LT(v, 64e9) << g.dump();
      } else if (name == "threads") {
        EXPECT_GE(v, 2.0) << g.dump();  // at least training and the telemetry sender
      }
      // On the rank's training clock: never past the last step's step count.
      EXPECT_LE(g["step"].get<std::int64_t>(), steps.back()["step"].get<std::int64_t>());
    }
    EXPECT_GE(cpu, 1) << "rank " << rank;
    EXPECT_GE(rss, 1) << "rank " << rank;
    EXPECT_TRUE(names.count("threads"));
    // The last sample is taken as the rank closes, after its last step.
    EXPECT_EQ(gauges.back()["step"], steps.back()["step"]);
  }
  std::filesystem::remove_all(dir);
}

TEST(SystemMetrics, SystemIntervalZeroSendsNone) {
  const std::string dir = temp_dir("system-off");
  LaunchOptions o;
  o.world = 1;
  o.args = seedRun(dir);
  o.args.insert(o.args.end(), {"--system-interval", "0"});
  const RankRun r = launch_ranks(o);
  ASSERT_EQ(r.exit_codes, std::vector<int>{0}) << r.stderr_text[0];
  EXPECT_FALSE(read_messages(dir + "/m0.jsonl", "step").empty());
  EXPECT_TRUE(read_messages(dir + "/m0.jsonl", "gauge").empty());
  std::filesystem::remove_all(dir);
}

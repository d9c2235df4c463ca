// Telemetry with the system sampler: gauges are taken on the sender thread and land in the
// metrics file like every message, even from a rank that lives less than a second (the last
// sample as it closes) and with no monitor; they carry the rank's training clock and step; a
// CUDA rank whose NVML is missing sends no GPU gauges and fails nothing; 0 switches it off.
#include <gtest/gtest.h>

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "system_gauges.h"
#include "telemetry.h"
#include "temp_jsonl.h"

using namespace ddpdesk;
using ddpdesk::test::TempJsonl;
namespace fs = std::filesystem;

namespace {

std::vector<nlohmann::json> gaugesIn(const fs::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "gauge") out.push_back(j);
  }
  return out;
}

Telemetry::Options options(const fs::path& file, const std::string& device, double interval) {
  Telemetry::Options o;
  o.hello.rank = 1;
  o.hello.world = 2;
  o.hello.device = device;
  o.metrics_file = file.string();
  o.system_interval = interval;
  o.system.nvml_library = "libddpdesk-no-such-nvml.so.1";  // as on a machine without a driver
  return o;
}

}  // namespace

TEST(TelemetrySystem, AShortRankStillSendsItsSystemGauges) {
  TempJsonl f("short");
  {
    Telemetry t(options(f.path, "cpu", 1.0));
    wire::Step s;
    s.rank = 1;
    s.step = 7;
    s.time = 5.0;
    t.send(s);
    // Some CPU work before the rank closes: enough time for the last sample's CPU value.
    const std::clock_t c0 = std::clock();
    volatile double sink = 0;
    while (double(std::clock() - c0) / CLOCKS_PER_SEC < 0.3)
      for (int i = 0; i < 100000; ++i) sink = sink + i * 0.5;
    t.close();
  }
  const auto gauges = gaugesIn(f.path);
  std::set<std::string> names;
  for (const auto& g : gauges) {
    names.insert(g["name"].get<std::string>());
    EXPECT_EQ(g["rank"], 1);
  }
  EXPECT_TRUE(names.count(gauges::kCpuPercent));
  EXPECT_TRUE(names.count(gauges::kRssBytes));
  EXPECT_TRUE(names.count(gauges::kThreads));
  // The last sample (as the rank closed) is on the training clock of the last step.
  const auto& last = gauges.back();
  EXPECT_EQ(last["step"], 7);
  EXPECT_GE(last["time"].get<double>(), 5.0);
  EXPECT_LT(last["time"].get<double>(), 65.0);
}

// The sender takes its first sample as soon as it starts, while the training thread may not have
// touched the Telemetry since constructing it (a rank still loading its data): the gauges reach
// the file all the same. Under ThreadSanitizer (scripts/test-tsan.sh) this case showed the
// sender reading the std::thread object that the constructor was still assigning (send() asked
// it which thread was calling); nothing here orders the two threads but the start itself.
TEST(TelemetrySystem, FirstSampleBeforeTheRankSendsAnything) {
  TempJsonl f("quiet");
  {
    Telemetry t(options(f.path, "cpu", 0.05));
    ::usleep(300 * 1000);  // several samples; the training thread does nothing meanwhile
    t.close();
  }
  const auto gauges = gaugesIn(f.path);
  ASSERT_FALSE(gauges.empty());
  EXPECT_EQ(gauges.front()["step"], 0);  // before any step: the clock's start
}

TEST(TelemetrySystem, CudaRankWithoutNvmlSendsNoGpuGaugesAndNoError) {
  TempJsonl f("nonvml");
  {
    Telemetry t(options(f.path, "cuda:0", 1.0));
    t.close();
  }
  const auto gauges = gaugesIn(f.path);
  ASSERT_FALSE(gauges.empty());
  for (const auto& g : gauges)
    EXPECT_NE(g["name"].get<std::string>().rfind("gpu_", 0), 0u) << g.dump();
}

TEST(TelemetrySystem, ZeroIntervalSendsNone) {
  TempJsonl f("off");
  {
    Telemetry t(options(f.path, "cpu", 0.0));
    t.close();
  }
  EXPECT_TRUE(gaugesIn(f.path).empty());
  std::ifstream in(f.path);
  std::string hello;
  ASSERT_TRUE(std::getline(in, hello));  // the file itself is written as before
  EXPECT_NE(hello.find("\"type\":\"hello\""), std::string::npos);
}

// The worker's own figures (on a CUDA rank, the caching allocator's, gpu_memory.h) ride with
// every system sample, as gauges like the sampler's, on the sender thread.
TEST(TelemetrySystem, MoreSystemValuesRideWithEverySample) {
  TempJsonl f("more");
  {
    Telemetry::Options o = options(f.path, "cuda:0", 0.05);
    o.more_system = [] {
      return std::vector<SystemSampler::Value>{{gauges::kGpuAllocatedBytes, 3e9, "B"},
                                               {gauges::kGpuPeakBytes, 5e9, "B"}};
    };
    Telemetry t(o);
    ::usleep(200 * 1000);
    t.close();
  }
  int allocated = 0, peak = 0, rss = 0;
  for (const auto& g : gaugesIn(f.path)) {
    const std::string name = g["name"];
    if (name == gauges::kGpuAllocatedBytes) {
      ++allocated;
      EXPECT_EQ(g["value"], 3e9);
      EXPECT_EQ(g["unit"], "B");
    }
    if (name == gauges::kGpuPeakBytes) ++peak;
    if (name == gauges::kRssBytes) ++rss;
  }
  EXPECT_GE(allocated, 2);  // several samples, each with the values
  EXPECT_EQ(allocated, peak);
  EXPECT_EQ(allocated, rss);
}

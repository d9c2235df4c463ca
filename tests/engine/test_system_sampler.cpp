// The system sampler: /proc parsing from saved text (a command name with spaces and parentheses,
// truncated and garbage input), CPU % over the first and later intervals from saved files, the
// real /proc of this process, and NVML: missing means no GPU values and no error; present (a GPU
// machine) means plausible values, else the case is skipped, never passed.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "nvml_gpu.h"
#include "system_gauges.h"
#include "system_sampler.h"

using namespace ddpdesk;
namespace fs = std::filesystem;

namespace {

// A real /proc/self/stat line (Linux 6.x), its command name replaced by one with spaces and
// parentheses: utime 250, stime 50, num_threads 7, starttime 810732.
const char* kStat =
    "5146 (my (odd) worker) R 5144 5144 20649 0 -1 4194304 96 0 0 0 250 50 0 0 20 0 7 0 810732 "
    "3133440 376 18446744073709551615 94191853404160 94191853424041 140723585730352 0 0 0 0 0 0 0 "
    "0 0 17 1 0 0 0 0 0 94191853440048 94191853441664 94192598409216 140723585731211 "
    "140723585731231 140723585731231 140723585732587 0\n";

std::map<std::string, double> byName(const std::vector<SystemSampler::Value>& values) {
  std::map<std::string, double> out;
  for (const auto& v : values) out[v.name] = v.value;
  return out;
}

// A scratch /proc with self/stat, self/statm and uptime; removed with the object.
struct FakeProc {
  fs::path dir;
  FakeProc() {
    dir = fs::temp_directory_path() / ("ddpdesk-proc-" + std::to_string(::getpid()));
    fs::create_directories(dir / "self");
  }
  ~FakeProc() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
  }
};

double processCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double steadySeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

TEST(ProcParsing, StatWithAnOddCommandName) {
  const auto st = parse_proc_stat(kStat);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->cpu_ticks, 300.0);
  EXPECT_EQ(st->threads, 7);
  EXPECT_EQ(st->start_ticks, 810732.0);
}

TEST(ProcParsing, StatRejectsTruncatedOrGarbageText) {
  EXPECT_FALSE(parse_proc_stat("").has_value());
  EXPECT_FALSE(parse_proc_stat("5146 (cat) R 5144 5144").has_value());  // cut before utime
  EXPECT_FALSE(parse_proc_stat("no parenthesis at all 1 2 3").has_value());
  std::string bad = kStat;
  bad.replace(bad.find(" 250 "), 5, " x50 ");  // utime not a number
  EXPECT_FALSE(parse_proc_stat(bad).has_value());
}

TEST(ProcParsing, StatmAndUptime) {
  EXPECT_EQ(parse_statm_resident_pages("765 406 379 5 0 123 0\n"), 406);
  EXPECT_FALSE(parse_statm_resident_pages("765").has_value());
  EXPECT_FALSE(parse_statm_resident_pages("765 -3 1").has_value());
  EXPECT_DOUBLE_EQ(*parse_uptime("8107.33 9490.63\n"), 8107.33);
  EXPECT_FALSE(parse_uptime("").has_value());
  EXPECT_FALSE(parse_uptime("abc 1").has_value());
}

// CPU % from saved files: the first sample averages since the process started (uptime minus
// starttime), later ones over the time since the previous sample.
TEST(SystemSampler, CpuPercentFromSavedProcFiles) {
  FakeProc proc;
  proc.write("self/stat", kStat);  // 300 ticks, started at tick 810732
  proc.write("self/statm", "765 406 379 5 0 123 0\n");
  proc.write("uptime", "8113.32 9490.63\n");  // 6 s after the start: 3 s of CPU in 6 s = 50 %
  SystemSampler::Options o;
  o.proc_dir = proc.dir.string();
  o.clock_ticks = 100;
  o.page_bytes = 4096;
  SystemSampler s(o);
  EXPECT_FALSE(s.gpu());
  auto v = byName(s.sample(1000.0));
  EXPECT_NEAR(v.at(gauges::kCpuPercent), 50.0, 1e-9);
  EXPECT_EQ(v.at(gauges::kRssBytes), 406.0 * 4096);
  EXPECT_EQ(v.at(gauges::kThreads), 7.0);
  EXPECT_EQ(v.count(gauges::kGpuUtilPercent), 0u);  // a CPU rank has no GPU values

  std::string later = kStat;
  later.replace(later.find(" 250 50 "), 8, " 400 80 ");  // +180 ticks = 1.8 s of CPU
  proc.write("self/stat", later);
  v = byName(s.sample(1001.0));  // in 1 s of wall time: 1.8 cores busy
  EXPECT_NEAR(v.at(gauges::kCpuPercent), 180.0, 1e-9);

  // 50 ms later: too short for 10 ms ticks, so no CPU value (memory and threads still come)...
  std::string soon = kStat;
  soon.replace(soon.find(" 250 50 "), 8, " 401 80 ");
  proc.write("self/stat", soon);
  v = byName(s.sample(1001.05));
  EXPECT_EQ(v.count(gauges::kCpuPercent), 0u);
  EXPECT_TRUE(v.count(gauges::kRssBytes));
  // ... and the next sample measures from the last one that had a value.
  std::string next = kStat;
  next.replace(next.find(" 250 50 "), 8, " 430 80 ");  // +30 ticks since 1001.0
  proc.write("self/stat", next);
  v = byName(s.sample(1001.5));
  EXPECT_NEAR(v.at(gauges::kCpuPercent), 60.0, 1e-9);
}

TEST(SystemSampler, AYoungProcessHasNoCpuValueYet) {
  FakeProc proc;
  proc.write("self/stat", kStat);
  proc.write("self/statm", "765 406 379 5 0 123 0\n");
  proc.write("uptime", "8107.42 9490.63\n");  // 0.1 s after the start
  SystemSampler::Options o;
  o.proc_dir = proc.dir.string();
  o.clock_ticks = 100;
  SystemSampler s(o);
  const auto v = byName(s.sample(5.0));
  EXPECT_EQ(v.count(gauges::kCpuPercent), 0u);
  EXPECT_EQ(v.at(gauges::kThreads), 7.0);
}

TEST(SystemSampler, UnreadableProcGivesNoValuesAndNoError) {
  SystemSampler::Options o;
  o.proc_dir = "/nonexistent-ddpdesk-proc";
  SystemSampler s(o);
  EXPECT_TRUE(s.sample(1.0).empty());
}

// This process's own /proc: resident memory and threads are there, and CPU % over an interval
// in which the process burnt 0.3 s of CPU is above 0 and within what the machine's cores allow.
TEST(SystemSampler, RealProcOfThisProcess) {
  SystemSampler s({});
  auto v = byName(s.sample(steadySeconds()));
  ASSERT_TRUE(v.count(gauges::kRssBytes));
  EXPECT_GT(v.at(gauges::kRssBytes), 1e6);
  EXPECT_GE(v.at(gauges::kThreads), 1.0);

  // Burn 0.3 s of CPU: at least that much wall time passes, enough for a CPU value.
  const double cpu0 = processCpuSeconds();
  volatile double sink = 0;
  while (processCpuSeconds() - cpu0 < 0.3)
    for (int i = 0; i < 100000; ++i) sink = sink + std::sqrt(double(i));
  v = byName(s.sample(steadySeconds()));
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_GT(v.at(gauges::kCpuPercent), 0.0);
  // Clock ticks are 10 ms apart: allow one tick of rounding on top of every core busy.
  EXPECT_LE(v.at(gauges::kCpuPercent), 100.0 * cores + 10.0);
}

// Another process by pid (how the monitor samples a Python-script rank): its values, not this
// process's. Saved files tell the two apart (a sampler reading "self" by mistake sees other
// values); then a real child, sleep(1), by its pid.
TEST(SystemSampler, AnotherProcessByPid) {
  FakeProc proc;
  std::filesystem::create_directories(proc.dir / "4242");
  proc.write("4242/stat", kStat);                       // 7 threads
  proc.write("4242/statm", "765 406 379 5 0 123 0\n");  // 406 pages
  proc.write("self/stat",
             std::string(kStat).replace(std::string(kStat).find(" 7 0 810732"), 11, " 3 0 810732"));
  proc.write("self/statm", "765 999 379 5 0 123 0\n");
  SystemSampler::Options o;
  o.proc_dir = proc.dir.string();
  o.process = "4242";
  o.page_bytes = 4096;
  const auto v = byName(SystemSampler(o).sample(1.0));
  EXPECT_EQ(v.at(gauges::kThreads), 7.0);
  EXPECT_EQ(v.at(gauges::kRssBytes), 406.0 * 4096);

  // A real child, by its pid: sleep(1) has one thread (a fork of this process would have more
  // under a sanitizer, whose runtime starts a thread of its own).
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(child, 0);
  // Sampled once it is sleep, not the fork before the exec.
  for (int i = 0; i < 500; ++i) {
    std::ifstream comm("/proc/" + std::to_string(child) + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "sleep") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  SystemSampler::Options real;
  real.process = std::to_string(child);
  const auto c = byName(SystemSampler(real).sample(steadySeconds()));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(c.count(gauges::kThreads));
  EXPECT_EQ(c.at(gauges::kThreads), 1.0);
  EXPECT_GT(c.at(gauges::kRssBytes), 0.0);

  // A process that is gone: no values, no error.
  EXPECT_TRUE(SystemSampler(real).sample(steadySeconds()).empty());
}

// No NVML (this build machine has no driver; here the library name is one that exists nowhere):
// the sampler says why, sends no GPU values, and the process values still come.
TEST(SystemSampler, MissingNvmlGivesNoGpuValuesAndNoError) {
  SystemSampler::Options o;
  o.gpu_index = 0;
  o.nvml_library = "libddpdesk-no-such-nvml.so.1";
  SystemSampler s(o);
  EXPECT_FALSE(s.gpu());
  EXPECT_NE(s.gpuStatus().find("cannot load libddpdesk-no-such-nvml.so.1"), std::string::npos)
      << s.gpuStatus();
  const auto v = byName(s.sample(steadySeconds()));
  EXPECT_TRUE(v.count(gauges::kRssBytes));
  for (const auto& [name, value] : v) EXPECT_EQ(name.rfind("gpu_", 0), std::string::npos) << name;

  NvmlGpu gpu({"libddpdesk-no-such-nvml.so.1", 0, ""});
  EXPECT_FALSE(gpu.available());
  EXPECT_TRUE(std::isnan(gpu.sample().util_percent));
}

// NVML's loading and reading, against a stand-in library with fixed readings (fake_nvml.cpp):
// the entry points bound by name, the device found by index or PCI bus id, units converted
// (milliwatts to watts), a reading a board does not support left out, init matched by shutdown.
#ifdef DDPDESK_FAKE_NVML
namespace {
int openInits() {
  void* lib = ::dlopen(DDPDESK_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
  auto* fn = reinterpret_cast<int (*)()>(::dlsym(lib, "fakeNvmlOpenInits"));
  const int n = fn ? fn() : -1;
  ::dlclose(lib);
  return n;
}
}  // namespace

// The GPUs the driver sees (what a Python script's ranks can use, whatever LibTorch has): each
// named with its memory; a library that cannot be loaded says so.
TEST(SystemSampler, NvmlListsTheDriversGpus) {
  const NvmlGpu::Devices d = NvmlGpu::list(DDPDESK_FAKE_NVML);
  EXPECT_EQ(d.names, (std::vector<std::string>{"Fake GPU A", "Fake GPU B"}));
  EXPECT_EQ(d.memory_bytes, (std::vector<std::uint64_t>{80ull << 30, 80ull << 30}));
  EXPECT_TRUE(d.why.empty());
  EXPECT_EQ(openInits(), 0) << "nvmlShutdown was not called";
  const NvmlGpu::Devices none = NvmlGpu::list("/nonexistent/libnvidia-ml.so.1");
  EXPECT_TRUE(none.names.empty());
  EXPECT_EQ(none.why, "no NVIDIA driver (cannot load /nonexistent/libnvidia-ml.so.1)");
}

TEST(SystemSampler, NvmlReadingsThroughTheLoadedLibrary) {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  {
    NvmlGpu gpu({DDPDESK_FAKE_NVML, 0, ""});
    ASSERT_TRUE(gpu.available()) << gpu.whyNot();
    EXPECT_EQ(openInits(), 1);
    const NvmlGpu::Sample g = gpu.sample();
    EXPECT_EQ(g.util_percent, 37.0);
    EXPECT_EQ(g.memory_used_bytes, 3 * GiB);
    EXPECT_EQ(g.memory_total_bytes, 80 * GiB);
    EXPECT_EQ(g.temperature_c, 55.0);
    EXPECT_DOUBLE_EQ(g.power_w, 123.456);
  }
  EXPECT_EQ(openInits(), 0) << "nvmlShutdown was not called";

  // By PCI bus id (preferred over the index, which CUDA may number differently).
  NvmlGpu byBus({DDPDESK_FAKE_NVML, 5, "00000000:3B:00.0"});
  ASSERT_TRUE(byBus.available()) << byBus.whyNot();
  EXPECT_EQ(byBus.sample().util_percent, 37.0);
  NvmlGpu noBus({DDPDESK_FAKE_NVML, 0, "00000000:99:00.0"});
  EXPECT_FALSE(noBus.available());
  EXPECT_EQ(noBus.whyNot(), "no NVML device for 00000000:99:00.0: Not Found");
  NvmlGpu noIndex({DDPDESK_FAKE_NVML, 7, ""});
  EXPECT_EQ(noIndex.whyNot(), "no NVML device for index 7: Not Found");

  // A board without temperature or power sensors: those are NaN, the rest are read.
  NvmlGpu partial({DDPDESK_FAKE_NVML, 1, ""});
  const NvmlGpu::Sample p = partial.sample();
  EXPECT_EQ(p.util_percent, 37.0);
  EXPECT_TRUE(std::isnan(p.temperature_c));
  EXPECT_TRUE(std::isnan(p.power_w));
}

TEST(SystemSampler, GpuGaugesOfACudaRank) {
  SystemSampler::Options o;
  o.gpu_index = 0;
  o.nvml_library = DDPDESK_FAKE_NVML;
  SystemSampler s(o);
  ASSERT_TRUE(s.gpu()) << s.gpuStatus();
  const auto v = byName(s.sample(steadySeconds()));
  EXPECT_EQ(v.at(gauges::kGpuUtilPercent), 37.0);
  EXPECT_EQ(v.at(gauges::kGpuMemoryUsedBytes), 3.0 * (1 << 30));
  EXPECT_EQ(v.at(gauges::kGpuMemoryTotalBytes), 80.0 * (1 << 30));
  EXPECT_EQ(v.at(gauges::kGpuTemperatureC), 55.0);
  EXPECT_DOUBLE_EQ(v.at(gauges::kGpuPowerW), 123.456);
  EXPECT_TRUE(v.count(gauges::kRssBytes));  // the process values still come
  // What this process holds on the device (NVML's process list), not the device's 3 GiB.
  EXPECT_EQ(v.at(gauges::kGpuProcessMemoryBytes), 2.0 * (1 << 30));
  // Another process by pid: its own figure; a process the device does not list holds nothing.
  o.process = "4242";
  EXPECT_EQ(byName(SystemSampler(o).sample(steadySeconds())).at(gauges::kGpuProcessMemoryBytes),
            1.0 * (1 << 30));
  o.process = "self";

  // The same board without sensors: no temperature or power gauge at all, not a NaN one.
  o.gpu_index = 1;
  SystemSampler partial(o);
  const auto w = byName(partial.sample(steadySeconds()));
  EXPECT_TRUE(w.count(gauges::kGpuUtilPercent));
  EXPECT_FALSE(w.count(gauges::kGpuTemperatureC));
  EXPECT_FALSE(w.count(gauges::kGpuPowerW));
  EXPECT_EQ(w.at(gauges::kGpuProcessMemoryBytes), 0.0);  // nothing of ours on device 1
}
#endif

// The real NVML, where there is one: device 0's values are plausible. Skipped (visibly) on a
// machine without the driver's library or a GPU.
TEST(SystemSampler, RealNvmlOnAGpuMachine) {
  NvmlGpu gpu(NvmlGpu::Options{});
  if (!gpu.available()) GTEST_SKIP() << "no NVML GPU here: " << gpu.whyNot();
  const NvmlGpu::Sample g = gpu.sample();
  EXPECT_GE(g.util_percent, 0.0);
  EXPECT_LE(g.util_percent, 100.0);
  EXPECT_GT(g.memory_total_bytes, 1e9);
  EXPECT_GT(g.memory_used_bytes, 0.0);
  EXPECT_LE(g.memory_used_bytes, g.memory_total_bytes);
  if (!std::isnan(g.temperature_c)) {
    EXPECT_GT(g.temperature_c, 0.0);
  }
  if (!std::isnan(g.power_w)) {
    EXPECT_GT(g.power_w, 0.0);
  }
  SystemSampler::Options o;
  o.gpu_index = 0;
  SystemSampler s(o);
  ASSERT_TRUE(s.gpu()) << s.gpuStatus();
  const auto v = byName(s.sample(steadySeconds()));
  EXPECT_TRUE(v.count(gauges::kGpuMemoryTotalBytes));
}

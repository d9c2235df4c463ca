// SystemSampler: what a process costs its machine, as gauge values (names in system_gauges.h).
// The worker samples itself about once a second on its telemetry sender thread, never the
// training thread; the monitor samples the ranks of Python-script runs by pid.
//  - CPU % from /proc/<pid>/stat (utime + stime) over wall time; 100 % = one core busy. The first
//    reading covers the time since the process started, later ones the time since the last.
//  - resident memory from /proc/<pid>/statm, threads from /proc/<pid>/stat;
//  - on a CUDA rank, its GPU's utilisation, memory, temperature and power through NVML
//    (nvml_gpu.h, loaded at run time): no library, driver or device means no GPU values.
// Plain C++ (no LibTorch, no Qt); nothing here throws or fails a run.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpdesk {

class NvmlGpu;

// The parts of /proc/<pid>/stat used here.
struct ProcStat {
  double cpu_ticks = 0;    // utime + stime, in clock ticks
  double start_ticks = 0;  // starttime: clock ticks after boot at which the process started
  long threads = 0;
};
// Parses the text of /proc/<pid>/stat (the command name may hold spaces and parentheses).
std::optional<ProcStat> parse_proc_stat(std::string_view text);
// Resident pages: the second field of /proc/<pid>/statm.
std::optional<long long> parse_statm_resident_pages(std::string_view text);
// Seconds since boot: the first field of /proc/uptime.
std::optional<double> parse_uptime(std::string_view text);

class SystemSampler {
 public:
  struct Options {
    std::string proc_dir = "/proc";  // tests point this at saved files (self/stat, ...)
    std::string process = "self";    // the process: "self" or a pid, as /proc names it
    long clock_ticks = 0;            // per second; 0: sysconf(_SC_CLK_TCK)
    long page_bytes = 0;             // 0: sysconf(_SC_PAGESIZE)
    int gpu_index = -1;              // the rank's CUDA device; -1: a CPU rank, no NVML
    std::string gpu_pci_bus_id;      // the same device by PCI bus id (preferred when known)
    std::string nvml_library = "libnvidia-ml.so.1";
  };
  struct Value {
    const char* name;  // one of system_gauges.h
    double value;
    const char* unit;
  };

  explicit SystemSampler(Options o);
  ~SystemSampler();
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  // CPU % needs this many seconds between readings: /proc counts CPU time in clock ticks
  // (10 ms), so a shorter span would be mostly rounding. A reading closer to the previous one has
  // no CPU value (the next one covers the span), nor has a first reading of a younger process.
  static constexpr double kMinCpuSpan = 0.2;

  // One reading at `now_s` (a steady clock, in seconds): the values that could be read.
  std::vector<Value> sample(double now_s);
  // Whether GPU values come with each sample, and when not (on a CUDA rank), why.
  bool gpu() const;
  const std::string& gpuStatus() const { return gpu_status_; }

 private:
  std::optional<double> cpu_percent(const ProcStat& st, double now_s);

  Options o_;
  std::unique_ptr<NvmlGpu> nvml_;
  std::string gpu_status_;
  std::optional<double> last_ticks_;
  double last_now_ = 0;
};

}  // namespace ddpdesk

#include "system_sampler.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "nvml_gpu.h"
#include "system_gauges.h"

namespace ddpdesk {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The whitespace-separated fields of `text`, in order.
std::vector<std::string_view> fields(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

std::optional<double> number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const std::string copy(s);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  // "pid (comm) state ppid ...": comm is free text, so fields are counted from its closing
  // parenthesis, the last one in the line. After it, field 3 (state) comes first.
  const std::size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  const std::vector<std::string_view> f = fields(text.substr(close + 1));
  // proc(5) numbers fields from 1: state is 3, utime 14, stime 15, num_threads 20, starttime 22.
  auto at = [&](int n) { return std::size_t(n - 3) < f.size() ? number(f[n - 3]) : std::nullopt; };
  const auto utime = at(14), stime = at(15), threads = at(20), start = at(22);
  if (!utime || !stime || !threads || !start) return std::nullopt;
  ProcStat st;
  st.cpu_ticks = *utime + *stime;
  st.threads = long(*threads);
  st.start_ticks = *start;
  return st;
}

std::optional<long long> parse_statm_resident_pages(std::string_view text) {
  const std::vector<std::string_view> f = fields(text);
  if (f.size() < 2) return std::nullopt;
  const auto v = number(f[1]);
  if (!v || *v < 0) return std::nullopt;
  return static_cast<long long>(*v);
}

std::optional<double> parse_uptime(std::string_view text) {
  const std::vector<std::string_view> f = fields(text);
  if (f.empty()) return std::nullopt;
  return number(f[0]);
}

SystemSampler::SystemSampler(Options o) : o_(std::move(o)) {
  if (o_.clock_ticks <= 0) o_.clock_ticks = ::sysconf(_SC_CLK_TCK);
  if (o_.page_bytes <= 0) o_.page_bytes = ::sysconf(_SC_PAGESIZE);
  if (o_.gpu_index >= 0) {
    NvmlGpu::Options n;
    n.library = o_.nvml_library;
    n.index = o_.gpu_index;
    n.pci_bus_id = o_.gpu_pci_bus_id;
    nvml_ = std::make_unique<NvmlGpu>(n);
    gpu_status_ = nvml_->available() ? std::string() : nvml_->whyNot();
  }
}

SystemSampler::~SystemSampler() = default;

bool SystemSampler::gpu() const {
  return nvml_ && nvml_->available();
}

std::optional<double> SystemSampler::cpu_percent(const ProcStat& st, double now_s) {
  const double hz = double(o_.clock_ticks);
  std::optional<double> out;
  if (last_ticks_) {
    const double dt = now_s - last_now_;
    // Too short a span for 10 ms ticks: no value, and the baseline stays for the next sample.
    if (dt < kMinCpuSpan) return std::nullopt;
    out = (st.cpu_ticks - *last_ticks_) / hz / dt * 100.0;
  } else if (const auto up = parse_uptime(read_file(o_.proc_dir + "/uptime"))) {
    // The first reading: the average since the process started.
    const double alive = *up - st.start_ticks / hz;
    if (alive >= kMinCpuSpan) out = st.cpu_ticks / hz / alive * 100.0;
  }
  last_ticks_ = st.cpu_ticks;
  last_now_ = now_s;
  if (out && *out < 0) out.reset();  // counters never go back; a bad reading is no reading
  return out;
}

std::vector<SystemSampler::Value> SystemSampler::sample(double now_s) {
  std::vector<Value> out;
  if (const auto st = parse_proc_stat(read_file(o_.proc_dir + "/" + o_.process + "/stat"))) {
    if (const auto cpu = cpu_percent(*st, now_s)) out.push_back({gauges::kCpuPercent, *cpu, "%"});
    out.push_back({gauges::kThreads, double(st->threads), ""});
  }
  if (const auto pages =
          parse_statm_resident_pages(read_file(o_.proc_dir + "/" + o_.process + "/statm")))
    out.push_back({gauges::kRssBytes, double(*pages) * double(o_.page_bytes), "B"});
  if (gpu()) {
    const NvmlGpu::Sample g = nvml_->sample();
    auto add = [&](const char* name, double v, const char* unit) {
      if (!std::isnan(v)) out.push_back({name, v, unit});
    };
    add(gauges::kGpuUtilPercent, g.util_percent, "%");
    add(gauges::kGpuMemoryUsedBytes, g.memory_used_bytes, "B");
    add(gauges::kGpuMemoryTotalBytes, g.memory_total_bytes, "B");
    add(gauges::kGpuTemperatureC, g.temperature_c, "C");
    add(gauges::kGpuPowerW, g.power_w, "W");
    const unsigned int pid = o_.process == "self"
                                 ? unsigned(::getpid())
                                 : unsigned(std::strtoul(o_.process.c_str(), nullptr, 10));
    add(gauges::kGpuProcessMemoryBytes, nvml_->processMemoryBytes(pid), "B");
  }
  return out;
}

}  // namespace ddpdesk

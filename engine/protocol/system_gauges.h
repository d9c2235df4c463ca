// The names and units of the system gauges a worker sends (engine/system/system_sampler.h)
// and the monitor shows (rank table, System chart, headless summary). Gauges are generic on the
// wire and in the store; only the places that show these particular ones need their names.
#pragma once

#include <string_view>

namespace ddpdesk::gauges {

// Per process, from /proc.
constexpr const char* kCpuPercent = "cpu_percent";  // %: 100 = one core busy
constexpr const char* kRssBytes = "rss_bytes";      // B: resident memory
constexpr const char* kThreads = "threads";         // count
// The rank's GPU, from NVML (absent on CPU ranks and where NVML is missing).
constexpr const char* kGpuUtilPercent = "gpu_util_percent";             // %: time a kernel ran
constexpr const char* kGpuMemoryUsedBytes = "gpu_memory_used_bytes";    // B: the whole device's
constexpr const char* kGpuMemoryTotalBytes = "gpu_memory_total_bytes";  // B
constexpr const char* kGpuTemperatureC = "gpu_temperature_c";           // C
constexpr const char* kGpuPowerW = "gpu_power_w";                       // W
// B: what the rank's own process holds on its GPU (NVML's process list: its context and
// allocations; the device's figure above counts every process on it).
constexpr const char* kGpuProcessMemoryBytes = "gpu_process_memory_bytes";
// B: LibTorch's CUDA caching allocator in the rank (a CUDA worker only, not NVML): memory held by
// live tensors, memory reserved from the driver (its cache included), and the most ever held by
// tensors at once. The worker's own figures; a Python script's ranks send none.
constexpr const char* kGpuAllocatedBytes = "gpu_allocated_bytes";
constexpr const char* kGpuReservedBytes = "gpu_reserved_bytes";
constexpr const char* kGpuPeakBytes = "gpu_peak_bytes";

// One of the names above: a system gauge, not a scalar of the training script's own (the window
// gives every other gauge a chart of its own).
constexpr bool isSystemGauge(std::string_view name) {
  for (std::string_view g :
       {kCpuPercent, kRssBytes, kThreads, kGpuUtilPercent, kGpuMemoryUsedBytes,
        kGpuMemoryTotalBytes, kGpuTemperatureC, kGpuPowerW, kGpuProcessMemoryBytes,
        kGpuAllocatedBytes, kGpuReservedBytes, kGpuPeakBytes})
    if (name == g) return true;
  return false;
}

}  // namespace ddpdesk::gauges

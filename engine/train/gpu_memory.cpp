#include "gpu_memory.h"

#include <c10/util/Exception.h>

#include <cstring>

#include "system_gauges.h"

#ifdef DDPDESK_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace ddpdesk {

std::optional<GpuMemory> gpu_memory(const torch::Device& device) {
#ifdef DDPDESK_HAVE_CUDA
  if (device.is_cuda()) {
    // getDeviceStats' return type moved between LibTorch versions; its members did not. Index 0
    // of each StatArray is StatType::AGGREGATE (all pools) in every version. It refuses (throws)
    // before CUDA is initialised in this process: no figures then.
    try {
      const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
      GpuMemory m;
      m.allocated = stats.allocated_bytes[0].current;
      m.reserved = stats.reserved_bytes[0].current;
      m.peak = stats.allocated_bytes[0].peak;
      return m;
    } catch (const c10::Error&) {
      return std::nullopt;
    }
  }
#endif
  (void)device;
  return std::nullopt;
}

std::vector<SystemSampler::Value> gpu_memory_gauges(const torch::Device& device) {
  const std::optional<GpuMemory> m = gpu_memory(device);
  if (!m) return {};
  return {{gauges::kGpuAllocatedBytes, static_cast<double>(m->allocated), "B"},
          {gauges::kGpuReservedBytes, static_cast<double>(m->reserved), "B"},
          {gauges::kGpuPeakBytes, static_cast<double>(m->peak), "B"}};
}

void release_cached_gpu_memory(const torch::Device& device) {
#ifdef DDPDESK_HAVE_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  (void)device;
}

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  return std::strstr(e.what(), "The following operation failed in the TorchScript interpreter") &&
         std::strstr(e.what(), "CUDA out of memory");
}

}  // namespace ddpdesk

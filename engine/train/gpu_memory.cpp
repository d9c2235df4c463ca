#include "gpu_memory.h"

#ifdef DDPDESK_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace ddpdesk {

std::optional<GpuMemory> gpu_memory(const torch::Device& device) {
#ifdef DDPDESK_HAVE_CUDA
  if (device.is_cuda()) {
    // getDeviceStats' return type moved between LibTorch versions; its members did not. Index 0
    // of each StatArray is StatType::AGGREGATE (all pools) in every version.
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    GpuMemory m;
    m.allocated = stats.allocated_bytes[0].current;
    m.reserved = stats.reserved_bytes[0].current;
    m.peak = stats.allocated_bytes[0].peak;
    return m;
  }
#endif
  (void)device;
  return std::nullopt;
}

void release_cached_gpu_memory(const torch::Device& device) {
#ifdef DDPDESK_HAVE_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  (void)device;
}

}  // namespace ddpdesk

// The rank's GPU memory as LibTorch's CUDA caching allocator counts it (allocated by tensors,
// reserved from the driver, the allocation peak), and giving its cached blocks back. CUDA builds
// only (DDPDESK_HAVE_CUDA); elsewhere there are no figures and nothing to give back.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>

#include <torch/types.h>

#include "system_sampler.h"

namespace ddpdesk {

struct GpuMemory {
  std::int64_t allocated = 0;  // bytes held by live tensors
  std::int64_t reserved = 0;   // bytes the allocator holds from the driver (cache included)
  std::int64_t peak = 0;       // the most bytes ever allocated at once by this process
};

// The figures of `device`; none for a CPU device or a build without CUDA.
std::optional<GpuMemory> gpu_memory(const torch::Device& device);
// The figures as system gauges (system_gauges.h: allocated, reserved, peak), for each system
// sample of the rank's telemetry; none where gpu_memory() has none. Safe on any thread.
std::vector<SystemSampler::Value> gpu_memory_gauges(const torch::Device& device);
// Gives the allocator's unused cached blocks back to the driver (after an out-of-memory, so a
// smaller try starts from a clean pool). Nothing on a CPU device or without CUDA.
void release_cached_gpu_memory(const torch::Device& device);
// Whether an error is an out-of-memory: LibTorch's c10::OutOfMemoryError, or that error raised
// inside a TorchScript module, which the TorchScript interpreter rethrows (as every error) as a
// std::runtime_error keeping its text ("The following operation failed in the TorchScript
// interpreter. ... RuntimeError: CUDA out of memory. Tried to allocate ...").
bool is_out_of_memory(const std::exception& e);

}  // namespace ddpdesk

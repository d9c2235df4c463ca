// The index lists of PyTorch's torch.utils.data.DistributedSampler, reproduced exactly:
// randperm(n) from a CPU generator seeded seed + epoch (or 0..n-1 without shuffle), padded by
// repeating the head up to a multiple of the world size (or truncated with drop_last), and rank r
// takes indices[r::world]. libtorch's DistributedRandomSampler is not compatible with this.
#pragma once

#include <cstdint>
#include <vector>

namespace ddpdesk {

struct SamplerOptions {
  std::int64_t dataset_size = 0;
  int world = 1;
  int rank = 0;
  bool shuffle = true;
  std::int64_t seed = 0;
  bool drop_last = false;
};

// Samples each rank gets per epoch (equal on all ranks).
std::int64_t samples_per_rank(const SamplerOptions& o);

// This rank's indices for `epoch`, in order.
std::vector<std::int64_t> distributed_indices(const SamplerOptions& o, std::int64_t epoch);

}  // namespace ddpdesk

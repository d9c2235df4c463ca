// Mirrors torch/utils/data/distributed.py (DistributedSampler.__init__ and __iter__) line by line,
// so a run started from Python and resumed here (or compared against it) sees the same samples.
#include "sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

#include <stdexcept>
#include <string>

namespace ddpdesk {

namespace {

void check(const SamplerOptions& o) {
  if (o.dataset_size < 0) throw std::invalid_argument("sampler: negative dataset size");
  if (o.world < 1) throw std::invalid_argument("sampler: world size must be >= 1");
  if (o.rank < 0 || o.rank >= o.world) {
    throw std::invalid_argument("sampler: rank " + std::to_string(o.rank) + " outside [0, " +
                                std::to_string(o.world - 1) + "]");
  }
}

// The epoch's permutation before padding: Python's
//   g = torch.Generator(); g.manual_seed(seed + epoch); torch.randperm(n, generator=g)
// A freshly constructed CPUGeneratorImpl(seed) is in the same state as manual_seed(seed).
std::vector<std::int64_t> epoch_order(const SamplerOptions& o, std::int64_t epoch) {
  const std::int64_t n = o.dataset_size;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  if (!o.shuffle) {
    for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    return order;
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<std::uint64_t>(o.seed + epoch));
  const torch::Tensor perm = torch::randperm(n, gen, torch::kLong);
  const std::int64_t* p = perm.data_ptr<std::int64_t>();
  order.assign(p, p + n);
  return order;
}

}  // namespace

std::int64_t samples_per_rank(const SamplerOptions& o) {
  check(o);
  const std::int64_t n = o.dataset_size;
  const std::int64_t w = o.world;
  // Python: drop_last and n % w != 0 -> ceil((n - w) / w), which is floor(n / w); else ceil(n / w).
  if (o.drop_last) return n / w;
  return (n + w - 1) / w;
}

std::vector<std::int64_t> distributed_indices(const SamplerOptions& o, std::int64_t epoch) {
  const std::int64_t per_rank = samples_per_rank(o);  // validates o
  const std::int64_t total = per_rank * o.world;
  std::vector<std::int64_t> order = epoch_order(o, epoch);
  const std::int64_t n = o.dataset_size;

  // Padding repeats the head cyclically (several times over when total - n > n, i.e. n < world),
  // which is what `(indices * ceil(pad / n))[:pad]` amounts to. drop_last simply truncates.
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(per_rank));
  for (std::int64_t k = o.rank; k < total; k += o.world) {
    mine.push_back(order[static_cast<std::size_t>(k % n)]);
  }
  return mine;
}

}  // namespace ddpdesk

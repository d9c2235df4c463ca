// How one rank's epoch is cut: its samples into micro-batches of `batch`, micro-batches into
// accumulation windows of `accum` (one optimizer step each). The last micro-batch and the last
// window may be short; every rank has the same number of samples per epoch (the sampler pads),
// so every rank's window k holds the same number of samples. Plain arithmetic, no LibTorch.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ddpdesk {

struct WindowPlan {
  std::int64_t per_rank = 0;  // samples this rank trains on per epoch
  std::int64_t batch = 1;
  std::int64_t accum = 1;

  std::int64_t micro_batches() const { return (per_rank + batch - 1) / batch; }
  std::int64_t windows() const { return (micro_batches() + accum - 1) / accum; }

  // Micro-batches [first_micro, end_micro) of window w.
  std::int64_t first_micro(std::int64_t w) const { return w * accum; }
  std::int64_t end_micro(std::int64_t w) const {
    return std::min(first_micro(w) + accum, micro_batches());
  }
  // Sample offsets [first, end) of micro-batch m within this rank's index list.
  std::int64_t micro_begin(std::int64_t m) const { return m * batch; }
  std::int64_t micro_end(std::int64_t m) const { return std::min((m + 1) * batch, per_rank); }
  // Samples this rank contributes to window w.
  std::int64_t window_samples(std::int64_t w) const {
    return micro_end(end_micro(w) - 1) - micro_begin(first_micro(w));
  }
};

}  // namespace ddpdesk

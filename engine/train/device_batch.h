// A batch moved to the rank's device (a no-op on the CPU); copies are asynchronous on CUDA.
#pragma once

#include <torch/types.h>

#include "dataset.h"

namespace ddpdesk {

inline Batch to_device(Batch b, const torch::Device& d) {
  if (d.is_cpu()) return b;
  b.input = b.input.to(d, /*non_blocking=*/true);
  if (b.lengths.defined()) b.lengths = b.lengths.to(d, true);
  b.target = b.target.to(d, true);
  return b;
}

}  // namespace ddpdesk

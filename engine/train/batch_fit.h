// --fit-batch: before training, the largest micro-batch that fits in every rank's memory, found
// by a trial forward and backward at decreasing sizes and agreed by all ranks; the accumulation
// steps follow from it, so every optimizer step still sees batch_size x accum_steps samples per
// rank and the run's losses are those of the run as asked (docs/gpu.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "mixed_precision.h"
#include "task.h"

namespace ddpdesk {

class Communicator;
class FaultInjection;
class GradSync;

// The sizes tried, largest first: the divisors of batch x accum that are at most batch (each
// keeps the window's sample count: micro x (batch x accum / micro) = batch x accum).
std::vector<std::int64_t> fit_candidates(std::int64_t batch, std::int64_t accum);

// Which of `sizes` (largest first) fit on this rank: `trial` runs one size and throws an
// out-of-memory error (is_out_of_memory, gpu_memory.h) when it does not fit; any other error
// goes on. Tried largest first until one fits; the smaller
// ones are then taken to fit too. 1 = fits, 0 = does not.
std::vector<double> local_fits(const std::vector<std::int64_t>& sizes,
                               const std::function<void(std::int64_t)>& trial);

struct BatchFit {
  std::int64_t micro = 0;  // samples per micro-batch: the largest size that fits on every rank
  std::int64_t accum = 0;  // micro-batches per optimizer step: batch x accum / micro
  std::string line;        // "micro-batch 16 × 8 accumulation steps fits (asked 64 × 2)"
};

// What the run needs to try a size: the task, this rank's samples in training order, the
// gradient buckets (zeroed after each try) and the test-only faults.
struct FitTrial {
  Task* task = nullptr;
  torch::Device device{torch::kCPU};
  const std::vector<std::int64_t>* indices = nullptr;
  GradSync* sync = nullptr;
  const FaultInjection* faults = nullptr;
  std::int64_t step = 1;         // the optimizer step training starts at (1-based)
  Communicator* comm = nullptr;  // null: a world of one
  int rank = 0;
  int world = 1;
  Precision precision = Precision::FP32;  // the forward's, as in training (its memory differs)
};

// Tries the sizes, agrees on one with the other ranks (one allreduce) and returns it. Everything
// a try touches is restored: gradients zeroed, the task's buffers (BatchNorm statistics) and
// torch's CPU generator as they were, no gradient collective armed. Throws std::runtime_error
// with one line when not even one sample fits on some rank.
BatchFit fit_batch(const FitTrial& t, std::int64_t batch, std::int64_t accum);

}  // namespace ddpdesk

// Validation: every rank evaluates its share of the validation set (samples rank, rank + world,
// ...), and one allreduce of (loss sum, correct, count) gives every rank the whole set's figures.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "mixed_precision.h"

namespace ddpdesk {

class Communicator;
class Dataset;
class Task;

struct EvalFigures {
  double loss = 0;           // mean per-sample loss over the whole validation set
  double accuracy = -1;      // classification tasks; -1 otherwise
  std::int64_t samples = 0;  // samples evaluated on all ranks
};

// comm may be null (one rank). Leaves the task in training mode. The forward runs at the
// training's precision.
EvalFigures evaluate(Task& task, const Dataset& eval, const torch::Device& device,
                     Communicator* comm, int rank, int world,
                     Precision precision = Precision::FP32);

}  // namespace ddpdesk

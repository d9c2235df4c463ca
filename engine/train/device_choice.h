// Which device a rank trains on: the CPU, or the GPU its local rank names (one GPU per rank).
#pragma once

#include <torch/types.h>

#include "rank_env.h"
#include "run_spec.h"

namespace ddpdesk {

// Throws BadInput (task.h) with validate_gpus()'s one message when the spec asks for more GPUs
// than this machine shows for its local ranks.
torch::Device choose_device(const RunSpec& spec, const RankEnv& env);

}  // namespace ddpdesk

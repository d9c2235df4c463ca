// Keeping the ranks' model copies equal where gradient sync does not: rank 0's parameters at the
// start, and rank 0's buffers (BatchNorm running statistics) after every window.
#pragma once

#include <vector>

#include <torch/types.h>

#include "task.h"  // NamedTensor

namespace ddpdesk {

class Communicator;

// Rank 0's parameters win, so every rank starts bitwise equal (one collective for all).
void broadcast_parameters(Communicator& comm, const std::vector<torch::Tensor>& params);

// PyTorch DDP's default (broadcast_buffers=True): rank 0's buffers win. DDP sends them before the
// first forward of each window; sending them after the window's last forward instead is the same
// for every later forward, and also leaves the ranks equal for validation, checkpoints and the
// step's buffer hash. One broadcast per dtype; nothing when there are no buffers.
void broadcast_buffers(Communicator& comm, const std::vector<NamedTensor>& buffers);

}  // namespace ddpdesk

// What a TorchScript module's graph says about training it (the user task reads it at load time,
// script_task.cpp):
//  - whether it was made by torch.jit.trace rather than torch.jit.script: tracing fixes the
//  train/eval mode of dropout, batch norm and the like to the mode
// the module was in, so such a module would train wrong. The user task refuses it at load time
// (script_task.cpp); docs/user-task.md says which models pass and why.
#pragma once

#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace ddpdesk {

// True when some op with a train/eval flag has it fixed where the mode matters: a constant flag
// (not dropout of probability 0, not a norm without running statistics) outside every branch
// that the module's `training` attribute decides, or one of torch.nn's eval-only fast paths.
// Reads the forward method's graph with submodule calls inlined; the module is not changed.
bool has_frozen_mode(const torch::jit::Module& module);

// Whether a training step of the module may draw random numbers: some op of `methods` (forward,
// and the module's per_sample_loss when it is the loss) that samples — dropout of any kind,
// RReLU, an RNN's dropout between layers, attention's dropout, bernoulli, rand and the like —
// unless its probability is zero where the graph shows it (a constant, an attribute of the
// module, or a choice between such values). Such a step cannot be recorded as a CUDA graph
// (--cuda-graph) without changing which numbers it draws.
bool draws_random_numbers(const torch::jit::Module& module,
                          const std::vector<std::string>& methods);

}  // namespace ddpdesk

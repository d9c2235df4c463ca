// Whether a TorchScript module was made by torch.jit.trace rather than torch.jit.script, seen
// in its graph: tracing fixes the train/eval mode of dropout, batch norm and the like to the mode
// the module was in, so such a module would train wrong. The user task refuses it at load time
// (script_task.cpp); docs/user-task.md says which models pass and why.
#pragma once

namespace torch::jit {
struct Module;
}

namespace ddpdesk {

// True when some op with a train/eval flag has it fixed where the mode matters: a constant flag
// (not dropout of probability 0, not a norm without running statistics) outside every branch
// that the module's `training` attribute decides, or one of torch.nn's eval-only fast paths.
// Reads the forward method's graph with submodule calls inlined; the module is not changed.
bool has_frozen_mode(const torch::jit::Module& module);

}  // namespace ddpdesk

// The user task's data: named tensors from a safetensors file or from the zip format of
// torch.save({name: tensor, ...}). The format is told by content, not by extension.
#pragma once

#include <map>
#include <string>

#include <torch/types.h>

#include "safetensors.h"  // TensorFileError

namespace ddpdesk {

// Every tensor in the file at `path`, by name, on the CPU.
//
// safetensors: the file is mapped once and each tensor is a view of the mapping (kept alive by
// the tensors themselves), so ranks on one machine share the page cache instead of each holding
// a copy. Those tensors are READ-ONLY memory: writing into them in place faults; clone() first.
// A tensor whose bytes are not aligned to its element size is copied instead.
// torch.save (zip format only): read whole into memory; each tensor owns its data.
//
// Throws TensorFileError with one line that names neither the path nor a flag.
std::map<std::string, torch::Tensor> load_tensor_file(const std::string& path);

}  // namespace ddpdesk

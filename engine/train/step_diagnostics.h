// What a step message carries for tests (DDPDESK_DEBUG_STEPS=1): hashes of every parameter's and
// buffer's bytes, which the tests compare across ranks, runs and resumes bitwise; and the seed of
// a step's random draws (dropout), which makes those comparisons possible with dropout on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "task.h"  // NamedTensor

namespace ddpdesk {

// FNV-1a over the bytes of every tensor in order, as 16 hex digits.
std::string hash_tensors(const std::vector<torch::Tensor>& tensors);
std::string hash_tensors(const std::vector<NamedTensor>& tensors);

// Dropout and any other randomness in the model: a stream per rank (masks differ between
// ranks, as they do under PyTorch DDP) and per optimizer step, so a resumed run draws exactly
// what an uninterrupted one would, without carrying every rank's generator state.
std::uint64_t step_seed(std::int64_t seed, int rank, std::int64_t step);

}  // namespace ddpdesk

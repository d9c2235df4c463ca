// Data sets the engine trains on. A Batch is already collated: the seed task's variable-length
// samples arrive as one [rows, 10] tensor plus per-sample lengths (no per-sample tensors).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "fmnist_files.h"  // kSystemFmnistDir, the files' names

namespace ddpdesk {

struct Batch {
  torch::Tensor input;    // seed: [sum(lengths), 10] float; fmnist: [B, 1, 28, 28] float
  torch::Tensor lengths;  // seed: [B] int64 rows per sample; fmnist: undefined
  torch::Tensor target;   // seed: [B] float; fmnist: [B] int64 class ids
  std::int64_t size = 0;  // B
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  // Collates the samples at `indices` (any order, repeats allowed) into one batch on the CPU.
  virtual Batch batch(const std::vector<std::int64_t>& indices) const = 0;
  // The whole set as one collated batch, sample i in row i, where it is held that way
  // (Fashion-MNIST); none where samples are made on demand. A graphed run (graphed_step.h) copies
  // it to the GPU once and gathers its micro-batches there.
  virtual std::optional<Batch> whole() const { return std::nullopt; }
};

// The seed task: sample i (i in [first, first + n)) has a length that is a multiple of 11 in
// [0, 99] and rows i + noise, all drawn deterministically from (seed, i); its target is i.
std::unique_ptr<Dataset> make_seed_dataset(std::int64_t n, std::int64_t seed,
                                           std::int64_t first = 0);

// Fashion-MNIST from idx files (gzip'd) in `dir`; split is "train" or "t10k". limit > 0 keeps the
// first `limit` images. Pixels scaled to [0,1] then normalised with mean 0.2860, std 0.3530.
// Throws std::runtime_error naming the missing or malformed file.
std::unique_ptr<Dataset> make_fmnist_dataset(const std::string& dir, const std::string& split,
                                             std::int64_t limit = 0);

}  // namespace ddpdesk

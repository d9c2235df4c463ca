// The models of the built-in tasks and their losses. A TaskModel takes a collated Batch, so the
// trainer never needs to know which task it runs.
#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "dataset.h"

namespace ddpdesk {

// Max over each sample's segment of `values` ([rows]), segments given by `lengths` ([B], int64,
// summing to rows). Padding is -inf, so it never wins a max; an empty segment gives 0.
// Vectorised: no loop over samples. Differentiable with respect to `values`.
torch::Tensor segment_max(const torch::Tensor& values, const torch::Tensor& lengths);

class TaskModel : public torch::nn::Module {
 public:
  // Model output for the batch: seed -> [B] predictions; fmnist -> [B, 10] logits.
  virtual torch::Tensor forward(const Batch& batch) = 0;
  // Sum (not mean) of per-sample losses: MSE for seed, cross-entropy for fmnist. The trainer
  // divides by the global window sample count itself, which is what makes accumulation exact.
  virtual torch::Tensor loss_sum(const torch::Tensor& output, const Batch& batch) = 0;
  // Number of correctly classified samples (classification tasks), else -1.
  virtual std::int64_t correct(const torch::Tensor& output, const Batch& batch) {
    (void)output;
    (void)batch;
    return -1;
  }
};

// task: "seed" (Linear(10,1) per row + segment_max), "fmnist-mlp" (784-512-256-10 ReLU) or
// "fmnist-cnn" (conv32-pool-conv64-pool-fc128-fc10). Parameters are initialised from the global
// torch seed, so call torch::manual_seed first.
std::shared_ptr<TaskModel> make_model(const std::string& task);

}  // namespace ddpdesk

// Adam (PyTorch's algorithm: L2 weight decay added to the gradient, bias-corrected moments) done
// in one pass over memory per parameter with plain loops. torch::optim::Adam issues about ten
// tensor ops per parameter: on the seed model that is most of a step's time (two tiny tensors),
// and on the MLP it is eight passes over 2 MiB instead of one.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace ddpdesk {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class FusedAdam {
 public:
  FusedAdam(std::vector<torch::Tensor> params, AdamOptions o);

  // Uses each parameter's .grad. Parameters must be contiguous float32 (CPU or CUDA; on CUDA the
  // update falls back to tensor ops).
  void step();

  std::int64_t steps() const { return step_; }
  void save(torch::serialize::OutputArchive& ar) const;
  // Throws std::runtime_error when the archive does not match these parameters.
  void load(torch::serialize::InputArchive& ar);

 private:
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;
  AdamOptions o_;
  std::int64_t step_ = 0;
};

}  // namespace ddpdesk

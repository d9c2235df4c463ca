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
  // The update as tensor operations reading the step's bias corrections from tensors (what a
  // CUDA rank always does; a CPU test asks for it to compare it with the loop).
  bool tensor_ops = false;
};

class FusedAdam {
 public:
  FusedAdam(std::vector<torch::Tensor> params, AdamOptions o);

  // Uses each parameter's .grad. Parameters must be contiguous float32 (CPU or CUDA; on CUDA the
  // update is done with tensor ops). step() is begin_step() then update(): begin_step() counts
  // the step and sets its bias corrections — for the tensor ops into two tensors on the
  // parameters' device, so update() queues the same operations on the same tensors at every step
  // and a CUDA graph recorded from it (graphed_step.h) replays any later step.
  void step() {
    begin_step();
    update();
  }
  void begin_step();
  void update();

  std::int64_t steps() const { return step_; }
  void save(torch::serialize::OutputArchive& ar) const;
  // Throws std::runtime_error when the archive does not match these parameters.
  void load(torch::serialize::InputArchive& ar);

 private:
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;
  AdamOptions o_;
  std::int64_t step_ = 0;
  float step_size_ = 0, inv_sqrt_bc2_ = 0;        // this step's, for the loop
  torch::Tensor neg_step_size_, inv_sqrt_bc2_t_;  // this step's, for the tensor ops (0-dim)
};

}  // namespace ddpdesk

// Gradient synchronisation like PyTorch DDP's reducer: parameters are grouped into buckets in
// reverse registration order (a small first bucket, then ~25 MiB ones); every parameter's .grad
// is a view into its bucket's flat buffer, so accumulation across micro-steps happens in place and
// costs no copies. On a window's last micro-step, a post-hook on each parameter's gradient
// accumulator counts it ready; a bucket whose parameters are all ready (and whose predecessors
// were launched) starts its allreduce at once, overlapping the rest of backward. Non-boundary
// micro-steps launch nothing.
//
// The last bucket carries a few extra floats: values every rank contributes to the same
// allreduce (window loss sum, stop request), so the global loss and the stop agreement cost no
// collective of their own.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <torch/types.h>

namespace torch::autograd {
struct Node;
}

namespace ddpdesk {

class Communicator;
class PreparedAllreduce;

class GradSync {
 public:
  enum Extra { kLossSum = 0, kStopVotes = 1, kExtraCount = 2 };

  // comm may be null (world of one): buffers and views still exist, nothing is sent.
  // overlap: launch buckets from the hooks during backward. Without it every bucket is reduced
  // inline after backward: better when ranks already use every core, since a comm thread then
  // only competes with compute.
  GradSync(const std::vector<torch::Tensor>& params, Communicator* comm, bool overlap = true,
           std::size_t first_bucket_bytes = 1u << 20, std::size_t bucket_bytes = 25u << 20);
  ~GradSync();

  // Arms (true) or disarms the hooks for the coming backward. Call with true before the window's
  // last backward, after setting extras().
  void set_boundary(bool sync);
  // Per-rank contributions that ride with the last bucket; after finish_window() they hold sums.
  torch::Tensor extras() { return extras_; }
  // Launches any bucket not yet launched (in order) and waits for all of them.
  void finish_window();
  // The gradients' flat buffers, without the extras: what a loss scale unscales.
  std::vector<torch::Tensor> gradient_buffers() const;
  // Zeroes every gradient (and the extras) in place, keeping the .grad views.
  void zero_grads();

  std::size_t bucket_count() const { return buckets_.size(); }
  // Bucket sizes in floats, in launch order (for logs and tests).
  std::vector<std::int64_t> bucket_sizes() const;

 private:
  struct Bucket {
    torch::Tensor flat;
    std::vector<std::size_t> params;  // indices into params_
    std::unique_ptr<PreparedAllreduce> op;
    int pending = 0;
    bool launched = false;
  };
  void on_grad_ready(std::size_t param_index);
  void launch_ready_locked();

  std::vector<torch::Tensor> params_;
  std::vector<std::size_t> bucket_of_;
  std::vector<Bucket> buckets_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // keeps hooks alive
  torch::Tensor extras_;
  Communicator* comm_;
  std::mutex mu_;
  bool armed_ = false;
  std::size_t next_launch_ = 0;
  bool overlap_;
};

}  // namespace ddpdesk

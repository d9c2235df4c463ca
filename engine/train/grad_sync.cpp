#include "grad_sync.h"

#include <stdexcept>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "communicator.h"

namespace ddpdesk {

GradSync::GradSync(const std::vector<torch::Tensor>& params, Communicator* comm, bool overlap,
                   std::size_t first_bucket_bytes, std::size_t bucket_bytes)
    : params_(params), bucket_of_(params.size()), comm_(comm), overlap_(overlap) {
  if (params.empty()) throw std::logic_error("GradSync: no parameters");
  // Reverse registration order approximates the order backward produces gradients in.
  std::vector<std::vector<std::size_t>> groups(1);
  std::size_t bytes = 0;
  for (std::size_t k = params.size(); k-- > 0;) {
    std::size_t b = params[k].numel() * sizeof(float);
    std::size_t cap = groups.size() == 1 ? first_bucket_bytes : bucket_bytes;
    if (!groups.back().empty() && bytes + b > cap) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(k);
    bytes += b;
  }
  auto opts = params[0].options().dtype(torch::kFloat);
  buckets_.resize(groups.size());
  for (std::size_t bi = 0; bi < groups.size(); ++bi) {
    Bucket& bucket = buckets_[bi];
    bucket.params = groups[bi];
    std::int64_t n = 0;
    for (auto k : bucket.params) n += params[k].numel();
    const bool last = bi + 1 == groups.size();
    bucket.flat = torch::zeros({n + (last ? kExtraCount : 0)}, opts);
    std::int64_t off = 0;
    for (auto k : bucket.params) {
      const auto& p = params_[k];
      if (p.scalar_type() != torch::kFloat) throw std::logic_error("GradSync: float32 only");
      // The gradient lives inside the bucket; autograd accumulates into it in place.
      p.mutable_grad() = bucket.flat.narrow(0, off, p.numel()).view(p.sizes());
      bucket_of_[k] = bi;
      off += p.numel();
    }
    if (last) extras_ = bucket.flat.narrow(0, n, kExtraCount);
    if (comm_) bucket.op = comm_->prepare_allreduce(bucket.flat);
  }
  for (std::size_t k = 0; k < params_.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[k]);
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, k](const torch::autograd::variable_list& outputs,
                  const torch::autograd::variable_list&) {
          on_grad_ready(k);
          return outputs;
        }));
    accumulators_.push_back(std::move(acc));
  }
}

GradSync::~GradSync() = default;

std::vector<std::int64_t> GradSync::bucket_sizes() const {
  std::vector<std::int64_t> out;
  for (const auto& b : buckets_) out.push_back(b.flat.numel());
  return out;
}

void GradSync::set_boundary(bool sync) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = sync && comm_ != nullptr;
  next_launch_ = 0;
  for (auto& b : buckets_) {
    b.pending = static_cast<int>(b.params.size());
    b.launched = false;
  }
}

void GradSync::on_grad_ready(std::size_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return;
  Bucket& b = buckets_[bucket_of_[k]];
  if (--b.pending == 0 && overlap_) launch_ready_locked();
}

void GradSync::launch_ready_locked() {
  // The last bucket is never launched from a hook: finish_window() runs it inline.
  while (next_launch_ + 1 < buckets_.size() && buckets_[next_launch_].pending <= 0) {
    Bucket& b = buckets_[next_launch_++];
    b.launched = true;
    b.op->start();
  }
}

void GradSync::finish_window() {
  if (!comm_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!armed_) throw std::logic_error("GradSync::finish_window without set_boundary(true)");
    // Parameters that took no part in this backward: their buckets go now, still in order.
    for (auto& b : buckets_) b.pending = 0;
    if (overlap_) launch_ready_locked();
    armed_ = false;
  }
  if (!overlap_) {  // everything inline, in order, on this thread
    for (auto& b : buckets_) b.op->run_now();
    return;
  }
  for (std::size_t i = 0; i + 1 < buckets_.size(); ++i) buckets_[i].op->wait();
  buckets_.back().op->run_now();
}

std::vector<torch::Tensor> GradSync::gradient_buffers() const {
  std::vector<torch::Tensor> out;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    const torch::Tensor& f = buckets_[i].flat;
    out.push_back(i + 1 == buckets_.size() ? f.narrow(0, 0, f.numel() - kExtraCount) : f);
  }
  return out;
}

void GradSync::zero_grads() {
  torch::NoGradGuard no_grad;
  for (auto& b : buckets_) b.flat.zero_();
}

}  // namespace ddpdesk

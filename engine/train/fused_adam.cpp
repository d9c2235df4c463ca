#include "fused_adam.h"

#include <cmath>
#include <stdexcept>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

namespace ddpdesk {
namespace {

// One parameter's update; float math like PyTorch's kernels, one pass over the four arrays.
void adam_update(float* __restrict p, const float* __restrict g, float* __restrict m,
                 float* __restrict v, std::int64_t n, float b1, float b2, float wd, float step_size,
                 float inv_sqrt_bc2, float eps) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float grad = g[i] + wd * p[i];
    m[i] = b1 * m[i] + (1.0f - b1) * grad;
    v[i] = b2 * v[i] + (1.0f - b2) * grad * grad;
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
  }
}

}  // namespace

FusedAdam::FusedAdam(std::vector<torch::Tensor> params, AdamOptions o)
    : params_(std::move(params)), o_(o) {
  for (const auto& p : params_) {
    if (p.scalar_type() != torch::kFloat || !p.is_contiguous())
      throw std::logic_error("FusedAdam: contiguous float32 parameters only");
    exp_avg_.push_back(torch::zeros_like(p));
    exp_avg_sq_.push_back(torch::zeros_like(p));
  }
  if (!params_.empty() && (o_.tensor_ops || !params_[0].is_cpu())) {
    neg_step_size_ = torch::zeros({}, params_[0].options());
    inv_sqrt_bc2_t_ = torch::zeros({}, params_[0].options());
  }
}

void FusedAdam::begin_step() {
  torch::NoGradGuard no_grad;
  ++step_;
  const double bc1 = 1.0 - std::pow(o_.beta1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(o_.beta2, static_cast<double>(step_));
  step_size_ = static_cast<float>(o_.lr / bc1);
  inv_sqrt_bc2_ = static_cast<float>(1.0 / std::sqrt(bc2));
  if (neg_step_size_.defined()) {  // a fill is a kernel with the value as its argument: no copy
    neg_step_size_.fill_(-step_size_);
    inv_sqrt_bc2_t_.fill_(inv_sqrt_bc2_);
  }
}

void FusedAdam::update() {
  torch::NoGradGuard no_grad;
  for (std::size_t k = 0; k < params_.size(); ++k) {
    torch::Tensor p = params_[k].detach();
    const torch::Tensor& g = params_[k].grad();
    if (!g.defined()) continue;
    if (!neg_step_size_.defined() && g.is_contiguous()) {
      adam_update(p.data_ptr<float>(), g.data_ptr<float>(), exp_avg_[k].data_ptr<float>(),
                  exp_avg_sq_[k].data_ptr<float>(), p.numel(), static_cast<float>(o_.beta1),
                  static_cast<float>(o_.beta2), static_cast<float>(o_.weight_decay), step_size_,
                  inv_sqrt_bc2_, static_cast<float>(o_.eps));
    } else {  // the loop's formula with tensor ops
      if (!neg_step_size_.defined())
        throw std::logic_error("FusedAdam: a non-contiguous gradient on the CPU loop's path");
      torch::Tensor grad = o_.weight_decay != 0 ? g.add(p, o_.weight_decay) : g;
      exp_avg_[k].mul_(o_.beta1).add_(grad, 1 - o_.beta1);
      exp_avg_sq_[k].mul_(o_.beta2).addcmul_(grad, grad, 1 - o_.beta2);
      torch::Tensor denom = exp_avg_sq_[k].sqrt().mul_(inv_sqrt_bc2_t_).add_(o_.eps);
      p.addcdiv_(exp_avg_[k] * neg_step_size_, denom);
    }
  }
}

void FusedAdam::save(torch::serialize::OutputArchive& ar) const {
  ar.write("adam/step", c10::IValue(step_));
  for (std::size_t k = 0; k < params_.size(); ++k) {
    ar.write("adam/exp_avg/" + std::to_string(k), exp_avg_[k], /*is_buffer=*/true);
    ar.write("adam/exp_avg_sq/" + std::to_string(k), exp_avg_sq_[k], true);
  }
}

void FusedAdam::load(torch::serialize::InputArchive& ar) {
  c10::IValue step;
  if (!ar.try_read("adam/step", step) || !step.isInt())
    throw std::runtime_error("no optimizer state");
  for (std::size_t k = 0; k < params_.size(); ++k) {
    torch::Tensor m, v;
    ar.read("adam/exp_avg/" + std::to_string(k), m, true);
    ar.read("adam/exp_avg_sq/" + std::to_string(k), v, true);
    if (!m.sizes().equals(params_[k].sizes()) || !v.sizes().equals(params_[k].sizes()))
      throw std::runtime_error("optimizer state does not match the model");
    torch::NoGradGuard no_grad;
    exp_avg_[k].copy_(m);
    exp_avg_sq_[k].copy_(v);
  }
  step_ = step.toInt();
}

}  // namespace ddpdesk

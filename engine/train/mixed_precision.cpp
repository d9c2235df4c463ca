#include "mixed_precision.h"

#include <cstdio>

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "task.h"

namespace ddpdesk {
namespace {

// LibTorch 2.4 replaced the per-device autocast setters with ones taking the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(bool cuda) {
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
}
void set_autocast(bool cuda, bool on) {
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on);
}
c10::ScalarType autocast_dtype(bool cuda) {
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
}
void set_autocast_dtype(bool cuda, c10::ScalarType t) {
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, t);
}
#else
bool autocast_enabled(bool cuda) {
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_autocast(bool cuda, bool on) {
  if (cuda)
    at::autocast::set_enabled(on);
  else
    at::autocast::set_cpu_enabled(on);
}
c10::ScalarType autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_autocast_dtype(bool cuda, c10::ScalarType t) {
  if (cuda)
    at::autocast::set_autocast_gpu_dtype(t);
  else
    at::autocast::set_autocast_cpu_dtype(t);
}
#endif

}  // namespace

Precision parse_precision(const std::string& text) {
  if (text == "bf16") return Precision::BF16;
  if (text == "fp16") return Precision::FP16;
  return Precision::FP32;
}

AutocastScope::AutocastScope(Precision precision, const torch::Device& device) {
  if (precision == Precision::FP32) return;
  active_ = true;
  cuda_ = device.is_cuda();
  was_enabled_ = autocast_enabled(cuda_);
  was_dtype_ = autocast_dtype(cuda_);
  set_autocast_dtype(cuda_, precision == Precision::BF16 ? at::kBFloat16 : at::kHalf);
  set_autocast(cuda_, true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(cuda_, was_enabled_);
  set_autocast_dtype(cuda_, was_dtype_);
}

torch::Tensor precision_forward(Task& task, const Batch& batch, Precision precision,
                                const torch::Device& device) {
  torch::Tensor out;
  {
    AutocastScope autocast(precision, device);
    out = task.forward(batch);
  }
  if (out.is_floating_point() && out.scalar_type() != torch::kFloat) out = out.to(torch::kFloat);
  return out;
}

bool LossScaler::unscale(const std::vector<torch::Tensor>& gradients) const {
  if (!enabled_) return true;
  torch::NoGradGuard no_grad;
  const double inverse = 1.0 / state_.scale;
  torch::Tensor bad;  // count of non-finite values, on the gradients' device: one read at the end
  for (const auto& g : gradients) {
    torch::Tensor n = torch::logical_not(torch::isfinite(g)).sum();
    bad = bad.defined() ? bad + n : n;
    g.mul_(inverse);
  }
  return !bad.defined() || bad.item<std::int64_t>() == 0;
}

std::string LossScaler::skipped_line(std::int64_t step) const {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "step %lld skipped: fp16 gradients overflowed; loss scale now %g (%lld skipped "
                "so far)",
                static_cast<long long>(step), state_.scale, static_cast<long long>(state_.skipped));
  return buf;
}

std::vector<wire::Gauge> LossScaler::gauges(double time, std::int64_t step) const {
  return {wire::Gauge{0, "loss_scale", scale(), "", time, step},
          wire::Gauge{0, "skipped_steps", static_cast<double>(state_.skipped), "", time, step}};
}

void LossScaler::update(bool stepped) {
  if (!enabled_) return;
  if (!stepped) {
    state_.scale *= kBackoffFactor;
    state_.growth = 0;
    ++state_.skipped;
    return;
  }
  if (++state_.growth == kGrowthInterval) {
    state_.scale *= kGrowthFactor;
    state_.growth = 0;
  }
}

}  // namespace ddpdesk

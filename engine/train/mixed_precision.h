// Mixed precision for the trainer (RunSpec::precision): autocast around the forward, in bf16 on
// CPU and CUDA or fp16 on CUDA, and fp16's dynamic loss scale. What stays float32: parameters,
// their gradients (autocast's casts are differentiable, so every micro-step's gradient
// accumulates into the float32 .grad), the loss (computed from the output cast back to float32,
// outside autocast), the allreduce and the optimizer. So accumulation and the stop/resume rules
// are those of an fp32 run, and a resumed run repeats an uninterrupted one bitwise on CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "wire.h"

namespace ddpdesk {

class Task;
struct Batch;

enum class Precision { FP32, BF16, FP16 };

// "fp32" | "bf16" | "fp16" (RunSpec's check has refused anything else).
Precision parse_precision(const std::string& text);

// Autocast on `device` for as long as the scope lives (a forward), as `with torch.autocast(...)`
// does: nested scopes share one cache of cast weights, dropped when the outermost one ends (so an
// optimizer step is never followed by a forward on stale casts). FP32: does nothing.
class AutocastScope {
 public:
  AutocastScope(Precision precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  c10::ScalarType was_dtype_ = c10::ScalarType::Undefined;
};

// The task's forward under `precision`'s autocast, its output back in float32 for the loss: the
// one place training and validation run a forward.
torch::Tensor precision_forward(Task& task, const Batch& batch, Precision precision,
                                const torch::Device& device);

// fp16's dynamic loss scale, with PyTorch's GradScaler defaults: the window's loss is multiplied
// by scale() before backward; after the allreduce, unscale() divides every gradient by it and
// says whether all of them are finite. A window with an inf or NaN gradient skips its optimizer
// step and halves the scale; 2000 clean windows in a row double it. Every rank sees the same
// reduced gradients, so every rank makes the same decision without a collective of its own.
// Disabled (bf16, fp32): scale() is 1 and unscale() checks nothing.
class LossScaler {
 public:
  struct State {
    double scale = 65536.0;    // 2^16, GradScaler's init_scale
    std::int64_t growth = 0;   // clean windows since the scale last changed
    std::int64_t skipped = 0;  // optimizer steps skipped for an overflow, since the run began
  };
  static constexpr double kGrowthFactor = 2.0;
  static constexpr double kBackoffFactor = 0.5;
  static constexpr std::int64_t kGrowthInterval = 2000;

  explicit LossScaler(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  double scale() const { return enabled_ ? state_.scale : 1.0; }

  // Divides the gradients (float32, in place) by the scale; false when any is not finite. The
  // caller skips the optimizer step then and calls update(false); else steps and update(true).
  bool unscale(const std::vector<torch::Tensor>& gradients) const;
  void update(bool stepped);

  const State& state() const { return state_; }
  void restore(const State& s) { state_ = s; }

  // Rank 0's line for a skipped step: "step 12 skipped: fp16 gradients overflowed; loss scale
  // now 32768 (1 skipped so far)".
  std::string skipped_line(std::int64_t step) const;
  // The scale and the skipped count as rank 0's gauges `loss_scale` and `skipped_steps`: each
  // gets a chart, as a script's scalars do.
  std::vector<wire::Gauge> gauges(double time, std::int64_t step) const;

 private:
  bool enabled_;
  State state_;
};

}  // namespace ddpdesk

// Test-only faults (FaultSettings in worker_settings.h), compiled in only when CMake's
// DDPDESK_FAULT_INJECTION is on; otherwise every hook is an empty inline function.
#pragma once

#include <chrono>
#include <limits>
#include <thread>

#include <c10/util/Exception.h>
#include <torch/types.h>

#include "worker_settings.h"

namespace ddpdesk {

class FaultInjection {
 public:
  FaultInjection(const FaultSettings& f, int rank) : f_(f), rank_(rank) {}

  // A straggler: this rank's data loading is slower by the configured time per micro-step.
  void slow_data() const {
#ifdef DDPDESK_FAULT_INJECTION
    if (f_.slow_rank == rank_ && f_.slow_ms > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(f_.slow_ms));
#endif
  }
  // A hung input pipeline: from optimizer step `step` (1-based) on, the held rank never leaves
  // its data loading; it sleeps in a loop until it is killed (a stop signal does not end it: the
  // stop is agreed in the allreduce it never reaches). Out of line, under a name of its own, so a
  // stack taken from the rank shows it inside its data loading (the hang doctor's test).
#ifdef DDPDESK_FAULT_INJECTION
  [[gnu::noinline]] void hold_data_loading(std::int64_t step) const {
    if (f_.hold_rank != rank_ || f_.hold_step < 1 || step < f_.hold_step) return;
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
#else
  void hold_data_loading(std::int64_t) const {}
#endif
  // A non-finite loss on rank 0 at the configured optimizer step (1-based).
  torch::Tensor poison_loss(torch::Tensor loss, std::int64_t step) const {
#ifdef DDPDESK_FAULT_INJECTION
    if (rank_ == 0 && f_.nan_at_step == step) return loss * std::numeric_limits<float>::quiet_NaN();
#else
    (void)step;
#endif
    return loss;
  }
  // The --cuda-graph path on a CPU rank, nothing recorded (graphed_step.h).
  bool graphed_cpu() const {
#ifdef DDPDESK_FAULT_INJECTION
    return f_.graphed_cpu;
#else
    return false;
#endif
  }
  // A device too small: a forward on more than the configured number of samples, on the
  // configured rank (or every rank) from the configured optimizer step (1-based) on, throws the
  // error a CUDA out-of-memory throws.
  void out_of_memory(std::int64_t samples, std::int64_t step) const {
#ifdef DDPDESK_FAULT_INJECTION
    if (f_.oom_above >= 0 && samples > f_.oom_above && (f_.oom_rank < 0 || f_.oom_rank == rank_) &&
        step >= f_.oom_step)
      TORCH_CHECK_WITH(OutOfMemoryError, false,
                       "CUDA out of memory (DDPDESK_FAULT_OOM_ABOVE=", f_.oom_above,
                       ": a micro-batch of ", samples, " samples)");
#else
    (void)samples, (void)step;
#endif
  }
  // The step whose checkpoint write dies half-way (save_checkpoint's argument), -1 for none.
  std::int64_t kill_in_checkpoint() const {
#ifdef DDPDESK_FAULT_INJECTION
    return f_.kill_in_checkpoint;
#else
    return -1;
#endif
  }

 private:
  FaultSettings f_;
  [[maybe_unused]] int rank_;  // unread in a build without the faults
};

}  // namespace ddpdesk

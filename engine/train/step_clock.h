// Where a rank's optimizer step goes: wall time split into data, forward, backward, exposed
// communication, optimizer and telemetry. Each part is the time from the previous mark to the
// next, so the parts add up to the step exactly; summed over a log interval and reported as
// per-step averages with the step message. Plain C++, so it is testable without LibTorch.
#pragma once

#include <chrono>

#include "wire.h"

namespace ddpdesk {

class StepClock {
 public:
  enum Part { Data, Forward, Backward, Comm, Optimizer, Telemetry, kParts };

  // Starts a step: time until the first mark goes to the part that mark names.
  void begin() { last_ = now(); }
  // Everything since the previous mark (or begin) was spent on `part`.
  void mark(Part part) {
    const double t = now();
    sums_[part] += t - last_;
    last_ = t;
  }
  // Ends a step (after its last mark).
  void end() { ++steps_; }
  // Time since the last mark is not counted (e.g. writing a checkpoint): skip it.
  void skip() { last_ = now(); }

  // Per-step averages in milliseconds since the previous take(), then starts a new interval.
  wire::StepTimes take() {
    wire::StepTimes t;
    const double k = steps_ > 0 ? 1000.0 / static_cast<double>(steps_) : 0.0;
    t.data = sums_[Data] * k;
    t.forward = sums_[Forward] * k;
    t.backward = sums_[Backward] * k;
    t.comm = sums_[Comm] * k;
    t.optimizer = sums_[Optimizer] * k;
    t.telemetry = sums_[Telemetry] * k;
    t.step = t.data + t.forward + t.backward + t.comm + t.optimizer + t.telemetry;
    t.steps = steps_;
    for (double& s : sums_) s = 0;
    steps_ = 0;
    return t;
  }

 private:
  static double now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
  }
  double sums_[kParts] = {};
  double last_ = 0;
  long steps_ = 0;
};

}  // namespace ddpdesk

// Step breakdowns for the breakdown, straggler and headless tests: a "normal" rank and one slowed
// in a given part, as the ranks' step messages carry them.
#pragma once

#include <optional>
#include <vector>

#include "wire.h"

namespace ddpdesk::test {

// compute 6.9 ms (data 1.2, forward 2, backward 3, optimizer 0.7), comm 1, telemetry 0.1.
inline wire::StepTimes normalTimes(long steps = 5) {
  wire::StepTimes t;
  t.data = 1.2;
  t.forward = 2.0;
  t.backward = 3.0;
  t.comm = 1.0;
  t.optimizer = 0.7;
  t.telemetry = 0.1;
  t.step = t.data + t.forward + t.backward + t.comm + t.optimizer + t.telemetry;
  t.steps = steps;
  return t;
}

// A normal rank with `extraMs` more in one part (field pointer: &wire::StepTimes::data, ...).
inline wire::StepTimes slowTimes(double wire::StepTimes::*part, double extraMs, long steps = 5) {
  wire::StepTimes t = normalTimes(steps);
  t.*part += extraMs;
  t.step += extraMs;
  return t;
}

// Steps per log interval in the straggler tests: long enough that three intervals of a slowed
// rank (8 ms a step or more) cover the rule's minimum duration (StragglerOptions::minSeconds,
// 2 s), so those tests see the count of intervals decide.
constexpr long kStragglerSteps = 100;

// An interval of `world` normal ranks, with rank `slow` (if >= 0) slowed in `part`, each rank's
// breakdown averaged over `steps` steps.
inline std::vector<std::optional<wire::StepTimes>> interval(int world, int slow = -1,
                                                            double wire::StepTimes::*part = nullptr,
                                                            double extraMs = 0,
                                                            long steps = kStragglerSteps) {
  std::vector<std::optional<wire::StepTimes>> v;
  for (int r = 0; r < world; ++r)
    v.push_back(r == slow ? slowTimes(part, extraMs, steps) : normalTimes(steps));
  return v;
}

inline wire::Step stepMessage(int rank, std::int64_t step, std::optional<wire::StepTimes> times) {
  wire::Step s;
  s.rank = rank;
  s.step = step;
  s.loss = 0.5;
  s.global_loss = 0.5;
  s.samples = step * 128;
  s.time = step * 0.01;
  s.times = times;
  return s;
}

}  // namespace ddpdesk::test

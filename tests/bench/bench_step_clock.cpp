// What the step breakdown costs a step: the trainer's StepClock marks a part with one
// steady_clock read and two additions. This times those marks in the same pattern as a training
// step (data, forward, backward per micro-step; comm, optimizer, telemetry per step) and, given a
// step time measured by a real run (bench_telemetry.sh passes it), says which fraction of that
// step the marks take.
//   bench_step_clock [accumulation steps] [measured step time in ms]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "step_clock.h"

int main(int argc, char** argv) {
  const int accum = argc > 1 ? std::atoi(argv[1]) : 1;
  const double step_ms = argc > 2 ? std::atof(argv[2]) : 0.0;
  if (accum < 1) {
    std::fprintf(stderr, "bench_step_clock: accumulation steps must be >= 1\n");
    return 2;
  }
  ddpdesk::StepClock clock;
  constexpr long kSteps = 2'000'000;
  double guard = 0;  // keeps the loop's results alive
  const auto t0 = std::chrono::steady_clock::now();
  for (long s = 0; s < kSteps; ++s) {
    clock.begin();
    for (int m = 0; m < accum; ++m) {
      clock.mark(ddpdesk::StepClock::Data);
      clock.mark(ddpdesk::StepClock::Forward);
      clock.mark(ddpdesk::StepClock::Backward);
    }
    clock.mark(ddpdesk::StepClock::Comm);
    clock.mark(ddpdesk::StepClock::Optimizer);
    clock.end();
    clock.mark(ddpdesk::StepClock::Telemetry);
    if (s % 100 == 99) guard += clock.take().step;
  }
  const double total_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  const double per_step_ns = total_ns / kSteps;
  std::printf("step breakdown: %.0f ns per optimizer step (%d marks, accumulation %d)%s\n",
              per_step_ns, 3 * accum + 3, accum, guard < 0 ? " " : "");
  if (step_ms > 0)
    std::printf("of a measured %.3f ms step: %.4f %% (target < 1 %%)\n", step_ms,
                per_step_ns / (step_ms * 1e6) * 100.0);
  return 0;
}

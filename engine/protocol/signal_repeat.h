// One stop request can reach a process more than once within moments: GNU timeout signals its
// child and then the child's process group; a supervisor may signal a process its terminal signals
// too; and Linux sends a rank its parent-death signal again each time one of the dying monitor's
// threads hands the rank on (a monitor with many threads, the window, killed outright). So a
// signal that repeats the same one within this window is the same request: "again" (the monitor's
// kill, a rank's exit at once) takes a later one. The monitor (SignalNotifier) and the worker
// both keep to it, measured as the signals arrive.
#pragma once

#include <cstdint>

namespace ddpdesk {

inline constexpr std::int64_t kSameSignalNs = 500'000'000;

// Whether a signal arriving at `now_ns` repeats the same one that arrived at `last_ns` (0: none
// yet), both CLOCK_MONOTONIC nanoseconds.
constexpr bool is_same_signal(std::int64_t last_ns, std::int64_t now_ns) {
  return last_ns != 0 && now_ns - last_ns < kSameSignalNs;
}

}  // namespace ddpdesk

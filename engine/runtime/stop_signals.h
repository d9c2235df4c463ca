// How a rank takes SIGINT and SIGTERM (a stop request; the monitor's death arrives as SIGTERM
// too): never on a thread that computes. Both are blocked in every thread from the first line of
// main, and one thread of their own takes them with sigwait. A signal handler would run on
// whichever thread the kernel picks, on that thread's stack, in the middle of whatever it does:
// oneDNN's JIT matrix products keep live data below the stack pointer, which a signal frame
// overwrites, and the product then writes through what it finds there (heap corruption in about
// 1 stop in 20: tests/engine/test_stop_signals.cpp shows it in a few hundred signals).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

namespace ddpdesk {

// Blocks SIGINT and SIGTERM in the calling thread; every thread started from it afterwards
// inherits the block. Call it first in main, before anything starts a thread.
void block_stop_signals();

// Lifts that block again (a process that only answers a question: default actions, so a SIGTERM
// ends it). Only before take_stop_signals.
void unblock_stop_signals();

// Starts the one thread that takes SIGINT and SIGTERM, named "ddpdesk-signals", which calls
// on_signal(signal, sender) for each, on that thread (sender: the pid that sent it, 0 when the
// kernel does not say); it runs until the process ends. Signals that came since
// block_stop_signals() are taken first; ones ignored (SIG_IGN inherited through exec) are taken
// from here on. Once only.
void take_stop_signals(std::function<void(int signal, pid_t sender)> on_signal);

// What a rank makes of each stop signal it takes: the first asks for a graceful stop, a later one
// for an exit at once, and the same request delivered again is neither: a repeat from the
// process that started the rank (a launcher asks once, then kills; Linux sends the parent-death
// SIGTERM once for each of a dying parent's threads that hands the rank on: a window killed
// outright sent two, and exiting on the second lost the run mid-checkpoint), or the same signal
// within moments (signal_repeat.h). Not thread-safe: the taking thread's.
class StopRequests {
 public:
  enum class Action { Stop, ExitNow, Repeat };
  explicit StopRequests(pid_t parent) : parent_(parent) {}
  // `sender`: as take_stop_signals() gives it; `now_ns`: monotonic_ns().
  Action take(int signal, pid_t sender, std::int64_t now_ns);

 private:
  pid_t parent_;
  bool stopping_ = false;
  std::int64_t last_ns_[65] = {};  // per signal number (SIGINT, SIGTERM)
};

// CLOCK_MONOTONIC in nanoseconds.
std::int64_t monotonic_ns();

// The name the taking thread has in /proc/<pid>/task/<tid>/comm.
inline constexpr const char* kStopSignalThreadName = "ddpdesk-signals";

}  // namespace ddpdesk

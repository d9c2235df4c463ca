// The rendezvous store: a c10d TCPStore at MASTER_ADDR:MASTER_PORT, hosted by rank 0 unless
// torchrun's agent already hosts it. Keys of one run share a prefix so runs never collide.
//
// Every wait for a peer here (connecting, a key another rank sets) watches the rank's stop flag:
// a rank asked to stop before training leaves its rendezvous kStopGrace after the stop when a
// peer is still missing, instead of waiting out the timeout for peers that may be stopping too
// (or never come).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/util/intrusive_ptr.h>

#include "rank_env.h"

namespace c10d {
class Store;
}

namespace ddpdesk {

// How often a rendezvous wait looks at the stop flag (and at the store, for a key).
constexpr std::chrono::milliseconds kStopPoll{50};
// How long a stop waits for peers still arriving before a wait gives up. Ranks that all come
// (a stop asked for before the job's ranks started, say) meet, and stop together at the first
// step with a checkpoint to resume from; a wait for a peer that does not come ends this long
// after the stop, not at the collective timeout.
constexpr std::chrono::milliseconds kStopGrace{2000};

// Thrown by a rendezvous wait when the rank was asked to stop: not a failure of the run.
class StopRequested : public std::runtime_error {
 public:
  StopRequested() : std::runtime_error("stopped while waiting for the other ranks") {}
};

// Watches a stop flag in a wait: check() throws StopRequested once the flag has been set for
// kStopGrace.
class StopWatch {
 public:
  explicit StopWatch(const std::atomic<bool>* stop) : stop_(stop) {}
  void check();

 private:
  const std::atomic<bool>* stop_;
  std::chrono::steady_clock::time_point since_{};
  bool seen_ = false;
};

// `stop`: the rank's stop flag (may be null). A system call cut short by a signal is retried
// when no stop was asked for.
c10::intrusive_ptr<c10d::Store> connect_store(const RankEnv& env, double timeout_s,
                                              const std::atomic<bool>* stop = nullptr);

// Waits until every key is set, up to timeout_s (then std::runtime_error naming the keys).
// Throws StopRequested once *stop has been set for kStopGrace while a key is still missing.
void wait_for_keys(c10d::Store& store, const std::vector<std::string>& keys, double timeout_s,
                   const std::atomic<bool>* stop);
// wait_for_keys for one key, then its value.
std::vector<std::uint8_t> get_when_set(c10d::Store& store, const std::string& key, double timeout_s,
                                       const std::atomic<bool>* stop);

// Whether an exception from c10d or gloo reports a system call interrupted by a signal (EINTR):
// they rethrow errno's text, not errno.
bool interrupted_by_signal(const std::exception& e);

}  // namespace ddpdesk

// PrintedMean: the run's loss curve of a script run whose ranks print their losses (no client):
// at each step, the mean of the losses the ranks printed for it. A rank's printed points are
// held until the step is complete, then go out together, each carrying the mean as its
// global_loss (the store makes the run's point from a step's first message: metrics_store.h).
//  - A step is complete once every rank waited for has printed that step or a later one; the
//    mean is over the ranks that printed it (a rank printing every 10 steps is in every tenth).
//  - Every rank is waited for, until a step has waited kWaitS for it (it prints nothing, only
//    rank 0 prints, it stopped printing, or ended where nobody saw), or more than kMaxHeldSteps
//    steps wait (a flood of lines: memory stays bounded): then the oldest steps go out without
//    it, and it is not waited for again until it prints. A rank that ended, or reports
//    otherwise now (the client, its event files), is dropped and never waited for.
//  - A point for a step already sent (a rank that came late) goes out at once with its own
//    loss as global_loss: the store has the step's point already and keeps it.
// Steps are the ranks' own (OutputLossReader); steps that go back (a restart) need reset().
// Pure: times are the caller's (seconds on any steady clock).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "wire.h"

namespace ddpdesk {

class PrintedMean {
 public:
  static constexpr double kWaitS = 10.0;
  static constexpr std::size_t kMaxHeldSteps = 10000;

  explicit PrintedMean(int world, double waitS = kWaitS);

  // Rank s.rank printed s.loss at s.step, at time `now`; what became complete is appended.
  void add(wire::Step s, double now, std::vector<wire::Message>& out);
  // The rank prints no more losses that count (it ended, or reports through the client or its
  // event files): steps no longer wait for it.
  void drop(int rank, std::vector<wire::Message>& out);
  // Steps that waited `waitS` or longer go out without the ranks they waited for.
  void expire(double now, std::vector<wire::Message>& out);
  // Every held step goes out as it is (the ranks have ended).
  void flush(std::vector<wire::Message>& out);
  // The ranks start again (a restart): nothing held, every rank waited for again.
  void reset();

  std::size_t heldSteps() const { return held_.size(); }

 private:
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
  struct Rank {
    std::int64_t last = kNone;  // the last step it printed
    bool waited = true;
    bool dropped = false;
  };
  struct Held {
    std::vector<wire::Step> points;
    double since = 0;  // when its first point came
  };
  void release(std::vector<wire::Message>& out);
  // The oldest held step goes out now: the ranks it waits for are no longer waited for.
  void giveUpOnOldest(std::vector<wire::Message>& out);
  void send(std::int64_t step, Held& held, std::vector<wire::Message>& out);

  double wait_s_;
  std::vector<Rank> ranks_;
  std::map<std::int64_t, Held> held_;
  std::int64_t sent_ = kNone;  // the last step sent
};

}  // namespace ddpdesk

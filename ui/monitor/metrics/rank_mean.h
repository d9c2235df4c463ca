// RankMean: the run's loss curve of a script run whose ranks report their losses themselves (no
// client): at each step, the mean of the losses the ranks reported for it — printed (one RankMean
// for the printed lines) or written to TensorBoard event files (another). A rank's points are
// held until the step is complete, then go out together, each carrying the mean as its
// global_loss (the store makes the run's point from a step's first message: metrics_store.h).
//  - A step is complete once every rank waited for has reported that step or a later one; the
//    mean is over the ranks that reported it (a rank reporting every 10 steps is in every tenth).
//  - Who is waited for (WaitFor): every rank from the start (printed losses: any rank may print),
//    or each rank once it has reported (event files: usually rank 0's alone, whose curve should
//    not wait for ranks that never write any).
//  - A rank is waited for until a step has waited kWaitS for it (it reports nothing, only rank
//    0 reports, it stopped, or ended where nobody saw), or more than kMaxHeldSteps steps wait (a
//    flood of lines: memory stays bounded): then the oldest steps go out without it, and it is
//    not waited for again until it reports. A rank that ended, or reports otherwise now (the
//    client; for printed losses, its event files), is dropped and never waited for.
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

class RankMean {
 public:
  static constexpr double kWaitS = 10.0;
  static constexpr std::size_t kMaxHeldSteps = 10000;

  enum class WaitFor { Everyone, Reporters };
  explicit RankMean(int world, double waitS = kWaitS, WaitFor waitFor = WaitFor::Everyone);

  // Rank s.rank printed s.loss at s.step, at time `now`; what became complete is appended.
  void add(wire::Step s, double now, std::vector<wire::Message>& out);
  // The rank reports from now on (WaitFor::Reporters: before its points of one read are added,
  // so a step is not sent before the rank's own point for it, read in the same pass, is in).
  void expect(int rank);
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
    std::int64_t last = kNone;  // the last step it reported
    bool waited = true;
    bool dropped = false;
  };
  struct Held {
    std::vector<wire::Step> points;
    double since = 0;  // when its first point came
  };
  Rank fresh() const;  // a rank before it reported anything
  void release(std::vector<wire::Message>& out);
  // The oldest held step goes out now: the ranks it waits for are no longer waited for.
  void giveUpOnOldest(std::vector<wire::Message>& out);
  void send(std::int64_t step, Held& held, std::vector<wire::Message>& out);

  double wait_s_;
  bool wait_all_;  // WaitFor::Everyone
  std::vector<Rank> ranks_;
  std::map<std::int64_t, Held> held_;
  std::int64_t sent_ = kNone;  // the last step sent
};

}  // namespace ddpdesk

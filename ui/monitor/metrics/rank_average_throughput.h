// A rank's own average training throughput over a run, from its step messages: the optimizer-step
// time the rank measured itself (the step breakdown's `step`, which leaves out evaluation,
// checkpoints and start-up) and the samples those steps trained. The figure a person quotes for
// a run, unlike the last log interval's rate (which an evaluation in that interval drags down)
// or the global rate divided by the world size (which is rank 0's clock, not this rank's).
#pragma once

#include "wire.h"

namespace ddpdesk {

class RankAverageThroughput {
 public:
  // One step message of this rank. `session` counts the rank's hellos: a new one (a resume)
  // restarts the sample count, whose start is then unknown, so that first interval is left out.
  void add(const wire::Step& s, int session);

  double seconds() const { return seconds_; }  // training time counted
  double samples() const { return samples_; }  // global samples trained in that time
  // This rank's samples per second of its own training time. Every rank trains the same share
  // of each window (world × its own samples = the window's), so its samples are samples / world.
  double perRankSamplesPerSec(int world) const;

 private:
  double seconds_ = 0;
  double samples_ = 0;
  int session_ = -1;
  double last_samples_ = 0;
  double last_time_ = 0;
};

}  // namespace ddpdesk

#include "metrics/rank_average_throughput.h"

namespace ddpdesk {

void RankAverageThroughput::add(const wire::Step& s, int session) {
  const double samples = double(s.samples);
  if (session != session_) {
    session_ = session;
    // Only a message that covers every step since the run began says how many samples its
    // interval trained (all of them); a resumed rank's first interval starts at an unknown count.
    if (s.times && s.times->steps > 0 && s.step == s.times->steps) {
      seconds_ += s.times->step * double(s.times->steps) / 1000.0;
      samples_ += samples;
    }
  } else if (samples > last_samples_) {
    // The rank's own step time when it reports a breakdown; otherwise (older workers) its clock
    // between messages, which counts an evaluation in between as training.
    seconds_ += s.times ? s.times->step * double(s.times->steps) / 1000.0 : s.time - last_time_;
    samples_ += samples - last_samples_;
  }
  last_samples_ = samples;
  last_time_ = s.time;
}

double RankAverageThroughput::perRankSamplesPerSec(int world) const {
  return seconds_ > 0 && world > 0 ? samples_ / world / seconds_ : 0.0;
}

}  // namespace ddpdesk

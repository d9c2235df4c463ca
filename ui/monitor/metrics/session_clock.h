// SessionClock: a run's training clock made monotonic across sessions, the one rule the charts'
// wall-time axis (plot/x_axis.h) and the comparison's time axis (compare/curve_compare.h) share.
// A worker's clock starts at 0 with each session (a resume, a restart); where it goes back, the
// new session is shifted to continue where the previous one ended: a time of t in the new
// session maps to (the previous session's end + t).
#pragma once

namespace ddpdesk {

class SessionClock {
 public:
  double map(double raw) {
    if (started_ && raw < lastRaw_) offset_ += lastRaw_;  // a new session: its clock restarted
    started_ = true;
    lastRaw_ = raw;
    return offset_ == 0 ? raw : raw + offset_;  // unshifted times stay the column's values exactly
  }
  // A session after the first has moved the times (until then, map() returns them as they are).
  bool shifted() const { return offset_ != 0; }
  void reset() { *this = SessionClock(); }

 private:
  double offset_ = 0;
  double lastRaw_ = 0;
  bool started_ = false;
};

}  // namespace ddpdesk

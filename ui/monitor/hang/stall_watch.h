// StallWatch: tells when a run stops stepping, so the hang doctor can take its stacks while it
// hangs (hang_doctor.h). Fed with the ranks' messages (RunController::onMessages); a step, an
// evaluation or an event is progress, a gauge is not (the system sampler runs on its own thread
// while the training thread hangs).
//
// The rules (stallLimitMs() and check()), armed by the run's first optimizer step after begin()
// (before it, loading, torch.compile or CUDA's start may take minutes without a word):
//   - no optimizer step from any rank for the limit: "no optimizer step from any rank for 3.1 s";
//   - a rank that has stepped before, silent for the limit while another rank was heard from
//     within it: "rank 2 has been silent for 31 s while the others step" (a rank that never
//     steps, as in a script that logs from rank 0 only, is never called silent).
// The limit is half the spec's collective_timeout (by then a healthy collective would have been
// half-way to failing the run), but never less than three times the longest gap seen so far
// between two reports of one rank (a log interval of many steps, a long evaluation), so a run's
// own pace is not taken for a stall (a gap that was said as a stall does not count). Each stall is
// said once: the run-wide one again only after a step came in after it, a rank's only after that
// rank stepped again.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <functional>
#include <vector>

namespace ddpdesk {

// The silence after which a run counts as stalled (see above), in milliseconds.
qint64 stallLimitMs(double collectiveTimeoutS, qint64 longestGapMs);

class StallWatch : public QObject {
  Q_OBJECT
 public:
  using Clock = std::function<qint64()>;  // monotonic milliseconds
  explicit StallWatch(QObject* parent = nullptr);

  // Tests: a clock of their own (default: a QElapsedTimer's).
  void setClock(Clock clock) { clock_ = std::move(clock); }
  // A run (or a restart of it) begins with `world` ranks (0: grows with the ranks heard) and the
  // spec's collective timeout; whatever was known of an earlier one is forgotten.
  void begin(int world, double collectiveTimeoutS);
  // The run is stopping or over: nothing more is said.
  void end();
  bool watching() const { return watching_; }
  // A message from `rank`: a step (`step`), or another kind of progress.
  void heard(int rank, bool step);
  // Applies the rules now (a timer calls it every kCheckMs while watching).
  void check();
  qint64 limitMs() const { return stallLimitMs(timeout_s_, longest_gap_ms_); }

  static constexpr int kCheckMs = 250;

 Q_SIGNALS:
  // One line why ("no optimizer step from any rank for 3.1 s (half the collective timeout)").
  void stalled(const QString& why);

 private:
  struct Rank {
    qint64 last_ms = -1;  // last progress; -1: never heard
    bool stepped = false;
    bool said = false;  // its silence was said; again after it steps
  };
  Rank& rank(int r);

  Clock clock_;
  QTimer timer_;
  bool watching_ = false;
  bool armed_ = false;
  double timeout_s_ = 60;
  std::vector<Rank> ranks_;
  qint64 last_step_ms_ = -1;  // the newest step of any rank
  qint64 longest_gap_ms_ = 0;
  bool said_all_ = false;
};

}  // namespace ddpdesk

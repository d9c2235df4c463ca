// LocalBackend: a run whose ranks are processes on this machine (run_backend.h). It creates the
// run directory, starts every rank through a LocalRankLauncher with the command the spec names
// (rank_command.h), and judges each rank's exit: a failure stops the others, a stop is SIGTERM
// then SIGKILL after the grace period, and once every rank is reaped and their sockets drained
// the run ends (Finished, Stopped or Failed with the first failed rank's story). A Python-script
// run's ranks that never speak to the monitor (no client in the script) are charted from what
// they print (output_loss.h).
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <vector>

#include "metrics/output_loss.h"
#include "run/run_backend.h"

namespace ddpdesk {

class LocalRankLauncher;
class RankProcess;

class LocalBackend : public RunBackend {
  Q_OBJECT
 public:
  explicit LocalBackend(RunController& run);
  ~LocalBackend() override;

  bool start(const RunSpec& spec, const QString& program, QString* error) override;
  void stop() override;
  void kill() override;
  void graceExpired() override;
  void closing() override;
  void retire() override;
  int worldSize() const override;
  std::vector<RankState> ranks() const override;

 private:
  void beginStopping();
  void onRankFinished(int rank);
  void recordFailure(const RankProcess& p);
  void maybeFinish();
  void finalize();
  // Task python: each rank's printed losses become its step messages while the rank has not
  // connected (a script with the client reports through it instead).
  void watchOutputLosses(int world);
  void onRankLine(int rank, const QString& text);
  // Task python: a rank that ended well while others still run (they may wait for it in a
  // collective forever) is said after a few seconds; if they have not ended a collective timeout
  // after it, they are stopped and the run fails, naming the wait.
  void watchLoneRanks(int rank);
  void loneRanksTimedOut();
  QString runningRanks() const;  // "1 3"

  LocalRankLauncher* launcher_;
  bool spec_is_script_ = false;
  std::vector<OutputLossReader> loss_readers_;
  QElapsedTimer since_start_;
  QTimer lone_timer_;
  int first_done_ = -1;  // the first script rank that ended well while others ran
  bool lone_warned_ = false;
  QTimer drain_timer_;
  bool term_sent_ = false;  // SIGTERM went out to every rank (once per run)
  bool draining_ = false;
};

}  // namespace ddpdesk

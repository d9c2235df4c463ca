// LocalBackend: a run whose ranks are processes on this machine (run_backend.h). It creates the
// run directory, starts every rank through a LocalRankLauncher with the command the spec names
// (rank_command.h), and judges each rank's exit: a failure stops the others, a stop is SIGTERM
// then SIGKILL after the grace period, and once every rank is reaped and their sockets drained
// the run ends (Finished, Stopped or Failed with the first failed rank's story). A Python-script
// run's system metrics, and its losses when the script has no client, are the monitor's own
// measurements (script_metrics.h).
#pragma once

#include <QTimer>
#include <vector>

#include "run/run_backend.h"

namespace ddpdesk {

class LocalRankLauncher;
class ScriptMetrics;
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
  // Task python: the monitor's own measurements of the ranks (script_metrics.h).
  void measureScript(const RunSpec& spec);
  // Task python: a rank that ended well while others still run (they may wait for it in a
  // collective forever) is said after a few seconds; if they have not ended a collective timeout
  // after it, they are stopped and the run fails, naming the wait.
  void watchLoneRanks(int rank);
  void loneRanksTimedOut();
  QString runningRanks() const;  // "1 3"

  LocalRankLauncher* launcher_;
  bool spec_is_script_ = false;
  ScriptMetrics* script_metrics_ = nullptr;  // task python only
  QTimer lone_timer_;
  int first_done_ = -1;  // the first script rank that ended well while others ran
  bool lone_warned_ = false;
  QTimer drain_timer_;
  bool term_sent_ = false;             // SIGTERM went out to every rank (once per run)
  bool stopped_from_outside_ = false;  // a rank died of a stop signal the monitor did not send
  bool draining_ = false;
};

}  // namespace ddpdesk

// LocalBackend: a run whose ranks are processes on this machine (run_backend.h). It creates the
// run directory, starts every rank through a LocalRankLauncher with the command the spec names
// (rank_command.h), and judges each rank's exit: a failure stops the others, a stop is SIGTERM
// then SIGKILL after the grace period, and once every rank is reaped and their sockets drained
// the run ends (Finished, Stopped or Failed with the first failed rank's story). A Python-script
// run's system metrics, and its losses when the script has no client, are the monitor's own
// measurements (script_metrics.h). A failure after training started restarts the run when its
// spec allows (restart_policy.h): after the backoff every rank starts again from the latest
// checkpoint in the run directory (a script with DDPDESK_RESUME and TORCHELASTIC_RESTART_COUNT).
#pragma once

#include <QTimer>
#include <vector>

#include "run/run_backend.h"
#include "run_spec.h"

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
  // When the recorded failure is a rank that only saw a peer exit first (its `error` message's
  // `peer`: the shared-memory communicator found that rank gone) and that peer failed too, the
  // peer is the cause.
  // A worker rank that exited 0 must have said how it ended (a finished or stopped event, on its
  // connection or in its exit record): one that did not is the run's failure.
  void blameARankThatEndedUnsaid();
  void blameThePeerThatDiedFirst();
  void maybeFinish();
  void finalize();
  // Starts every rank of `spec` (start(), and each restart).
  void launchRanks(const RunSpec& spec);
  // The failure's text: its line (with `note` after it), the error, the stderr tail.
  QString failureText(const QString& note) const;
  RunStatus endingStatus() const;
  // After a failure: schedules a restart if the policy gives one (true), else keeps its note.
  bool restartIfDue();
  void restartNow();
  // Stop or kill while a restart waits: the run ends Stopped (its ranks are gone already).
  bool cancelRestart(const QString& how);
  // Task python: the monitor's own measurements of the ranks (script_metrics.h).
  void measureScript(const RunSpec& spec);
  // Task python: a rank that ended well while others still run (they may wait for it in a
  // collective forever) is said after a few seconds; if they have not ended a collective timeout
  // after it, they are stopped and the run fails, naming the wait.
  void watchLoneRanks(int rank);
  void loneRanksTimedOut();
  QString runningRanks() const;  // "1 3"

  LocalRankLauncher* launcher_;
  QString program_;
  QTimer restart_timer_;
  QString restart_note_;  // why a failure did not restart (restart_policy.h), for its reason
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

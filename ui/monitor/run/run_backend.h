// RunBackend: what differs between kinds of run, behind RunController (run_controller.h).
// RunController keeps what every run has (the metrics server and store, the run directory, the
// state, the failure and its reason, status.json and monitor.log, the grace timer, the signals to
// the GUI); a backend starts or follows the ranks, stops and kills them, shows them in the rank
// table, and learns how the run ended, which it hands to RunController::endRun() once.
//
//   LocalBackend (local/local_backend.h)       ranks as processes on this machine
//   FollowedBackend (follow/followed_backend.h) a run directory written by ranks started elsewhere
//   SshFollowedBackend (ssh/ssh_followed_backend.h) the same, of a directory on another host
//   SlurmBackend (slurm/slurm_backend.h)       a Slurm job, submitted here or through a login node
//
// A backend lives for one run: start() or attach() makes it the controller's (through
// beginRun()/beginFollowing()), and the next run's backend replaces it.
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "run/run_controller.h"
#include "run/run_directory.h"
#include "wire.h"

namespace ddpdesk {

class RunFollower;
class SlurmJob;

class RunBackend : public QObject {
  Q_OBJECT
 public:
  using State = RunController::State;
  using RankState = RunController::RankState;

  explicit RunBackend(RunController& run);
  ~RunBackend() override;

  // Starts a run of `spec` (validated; run_dir set when resuming a directory in place) with the
  // worker `program`. False with *error (one line) when nothing began.
  virtual bool start(const RunSpec& spec, const QString& program, QString* error);
  // Follows the run at `where` (a directory or an ssh:// URL). False with *error (one line).
  virtual bool attach(const QString& where, QString* error);
  // A graceful stop (the controller has set stopRequested()), and SIGKILL's equivalent.
  virtual void stop() = 0;
  virtual void kill() = 0;
  // The grace period after stop() ran out (RunController::startGrace()).
  virtual void graceExpired() {}
  // The controller is being destroyed while this run is active.
  virtual void closing() {}
  // This backend is being replaced by the next run's: stop reading and polling.
  virtual void retire() {}

  // The ranks' process view.
  virtual int worldSize() const;
  virtual std::vector<RankState> ranks() const = 0;
  QList<qint64> pids() const;

  virtual bool isRemote() const { return false; }
  virtual SlurmJob* slurmJob() const { return nullptr; }
  virtual RunFollower* follower() const { return nullptr; }

 protected:
  // The controller's run, for the backends: the parts every kind of run shares.
  RunController& run() const { return run_; }
  RunSpec& spec() const { return run_.spec_; }
  const QString& runDir() const { return run_.run_dir_path_; }
  RunDirectory* dir() const { return run_.dir_.get(); }
  MetricsStore* store() const { return run_.store_; }
  MetricsServer* server() const { return run_.server_; }
  State state() const { return run_.state_; }
  void setState(State s) const { run_.setState(s); }
  bool stopRequested() const { return run_.stop_requested_; }
  bool attached() const { return run_.attached_; }
  bool& hasFailure() const { return run_.has_failure_; }
  RunController::Failure& failure() const { return run_.failure_; }
  QString& launcherStatus() const { return run_.launcher_status_; }
  std::vector<bool>& connected() const { return run_.connected_; }
  const std::vector<wire::Error>& rankErrors() const { return run_.rank_errors_; }
  const std::vector<bool>& rankStopped() const { return run_.rank_stopped_; }
  const std::vector<bool>& rankFinished() const { return run_.rank_finished_; }
  // The controller's steps of a run (run_controller.h).
  void beginRun(const RunSpec& spec, std::unique_ptr<RunDirectory> dir, qint64 history,
                int world) const {
    run_.beginRun(spec, std::move(dir), history, world);
  }
  void beginFollowing(const QString& where, const RunSpec& spec) const {
    run_.beginFollowing(where, spec);
  }
  void rankConnectedNow(int rank) const { run_.rankConnectedNow(rank); }
  void growWorld(int world) const { run_.growWorld(world); }
  void ingest(const std::vector<wire::Message>& messages, const QByteArray& lines) const {
    run_.onMessages(messages, lines);
  }
  // Messages the monitor made itself (a script run's measurements: ScriptMetrics), recorded as
  // the ranks' own would be.
  void ingestMeasured(const std::vector<wire::Message>& messages) const;
  // A restart of the run (restart `attempt`; `maxRestarts` 0: the launcher's own limit): an
  // event "restart" at the current step in the record, where the charts mark it and the history
  // counts it, and RunController::restarting().
  void announceRestart(int attempt, int maxRestarts, const QString& cause, int delayMs) const;
  bool trained() const { return run_.trained_; }
  void beginRestart() const { run_.beginRestart(); }
  void startGrace() const { run_.startGrace(); }
  void stopGrace() const { run_.stopGrace(); }
  void endRun(State final, const QString& reason, RunStatus status = RunStatus(),
              const QString& logPrefix = QString()) const {
    run_.endRun(final, reason, std::move(status), logPrefix);
  }

 private:
  RunController& run_;
};

}  // namespace ddpdesk

// FollowedBackend: a run this controller did not start (run_backend.h): ranks started by hand,
// torchrun, srun or another ddpdesk write their metrics/rank-N.jsonl files into a directory,
// and a RunFollower reads them into the same store, states and rank table. Starting lasts until
// every rank's hello was read; the run ends when every rank's file ends in
// finished/stopped/error or, on this host, its pid is gone (run_follower.h). Nothing is written
// into a followed directory. stop()/kill() signal the ranks that run on this host.
// SshFollowedBackend (ssh/ssh_followed_backend.h) follows a directory on another host through a
// mirror; SlurmBackend (slurm/slurm_backend.h) follows its job's directory the same way.
// A Python-script run (task python in its spec.json) is measured as a local one is
// (ScriptMetrics): losses printed to rank-N.log and TensorBoard event files this host can read,
// for the ranks that do not report through the client; their system metrics are those the run's
// own monitor sampled and wrote to metrics/system.jsonl (RunFollower reads it; no pid here).
// Such ranks write no file that could end the run: when the files end the run, the status.json
// that the run's own monitor writes at its end ends it too, with the state and reason recorded
// (over ssh, the mirror's copy of it).
#pragma once

#include "run/run_backend.h"
#include "wire.h"

namespace ddpdesk {

class ScriptMetrics;
class SshRunMirror;

class FollowedBackend : public RunBackend {
  Q_OBJECT
 public:
  explicit FollowedBackend(RunController& run);
  ~FollowedBackend() override;

  bool attach(const QString& where, QString* error) override;
  void stop() override;
  void kill() override;
  void retire() override;
  std::vector<RankState> ranks() const override;
  bool isRemote() const override { return mirror_ != nullptr; }
  RunFollower* follower() const override { return follower_; }

 protected:
  // Begins following the run directory `path` whose spec.json says `spec` (empty: not started
  // by ddpdesk); its world is kept for the script's measurements (the followed run's own grows
  // with the ranks' hellos).
  void beginFollowingRecord(const QString& path, const RunSpec& spec);
  // A RunFollower feeding the run (follower_). With filesEndTheRun, the ranks' files ending
  // ends the run (finalizeFollowed); else something else does (a Slurm job's end).
  RunFollower* newFollower(bool filesEndTheRun);
  // The run ended as its ranks' files say.
  void finalizeFollowed();
  // Sends `signo` to the followed ranks still running where they can be reached; false (with a
  // warning) when no rank can be reached. Here: the ranks on this host.
  virtual bool signalRanks(int signo);
  // Whether launcherStatus() is someone else's (a Slurm job's), not the ranks' silence.
  virtual bool ownsLauncherStatus() const { return false; }

  // The follower's last lines have been read: what the script's event files gained last.
  void finishMeasuring();
  // The run ended as the status.json its own monitor wrote says (a script run's).
  void watchRecordedEnding();

  RunFollower* follower_ = nullptr;
  SshRunMirror* mirror_ = nullptr;           // over ssh: the local mirror follower_ reads
  ScriptMetrics* script_metrics_ = nullptr;  // task python only
  int recorded_world_ = 0;                   // the spec's, when following a record

 private:
  void onFollowedHello(const wire::Hello& hello);
};

}  // namespace ddpdesk

// SlurmBackend: a spec with launcher "slurm" is submitted as a batch job (run_backend.h;
// slurm_job.h, slurm_script.h): the run directory gets spec.json and job.sbatch, `sbatch
// --parsable` gives the job id (kept in slurm.json), and the ranks' metrics files are followed
// as FollowedBackend follows them. Starting lasts while the job is pending and until every rank
// said hello; the run ends when Slurm says the job has ended (launcherStatus() on the way:
// pending with its reason, running on its nodes). stop() signals the job's steps with SIGTERM
// after writing the stop file (graceful: checkpoint, exit 0), kill() cancels the job. A refused
// submission (sbatch's own line) fails the run with failure().rejected set and leaves no new run
// directory behind. Destroying the controller leaves a submitted job running.
//
// With spec.slurm_login the same happens through a login node over ssh
// (slurm_backend_login.cpp): the run directory is spec.slurm_remote_dir on the cluster,
// spec.run_dir is the local record, the metrics come through an SshRunMirror, and a graceful
// stop writes the stop file there over ssh before the signal. A spec whose resume is an ssh://
// URL (login_resume.h) continues the run in that directory on the cluster.
//
// A job that Slurm requeues after it ran (spec slurm_requeue) goes on as the same run, restarted
// (slurm_backend_requeue.cpp).
//
// attach() of a directory whose slurm.json names a job (slurm_backend_attach.cpp) follows that
// job as the submitting controller does: its state through squeue/scontrol/sacct, the end of the
// run when the job ends, stop()/kill() on the job. Without Slurm's tools here, or once Slurm has
// forgotten the job, the files alone are followed as for any directory.
#pragma once

#include <QByteArray>

#include "follow/followed_backend.h"
#include "slurm/slurm_run_files.h"

namespace ddpdesk {

class SlurmJob;
struct SlurmJobStatus;

class SlurmBackend : public FollowedBackend {
  Q_OBJECT
 public:
  explicit SlurmBackend(RunController& run);
  ~SlurmBackend() override;

  bool start(const RunSpec& spec, const QString& program, QString* error) override;
  bool attach(const QString& where, QString* error) override;
  void stop() override;
  void kill() override;
  void closing() override;
  void retire() override;
  SlurmJob* slurmJob() const override { return job_; }

 protected:
  bool ownsLauncherStatus() const override { return job_ != nullptr; }

 private:
  SlurmJob* newSlurmJob();
  void rememberForUndo(const QString& path, bool created);
  void onSlurmSubmitted(const QString& jobId);
  void onSlurmRejected(const QString& line);
  void onSlurmStatus(const SlurmJobStatus& s);
  void onSlurmEnded(const SlurmJobStatus& s);
  // Slurm requeued the job (its restart count grew, or it is pending again after it ran): a
  // restart of the same run (slurm_backend_requeue.cpp); false otherwise.
  bool followRequeue(const SlurmJobStatus& s);
  void finalizeSlurm(const SlurmJobStatus& s);
  void nameFailedSlurmRank();
  void stopSlurm(bool graceful);
  // Slurm cannot tell (no squeue here, the job forgotten): the ranks' files end the run.
  void followFilesOnly(const QString& why);
  // Through a login node (slurm_backend_login.cpp).
  bool startViaLogin(RunSpec spec, const QString& program, QString* error);
  void writeRemoteRun(const QString& remoteDir, const QString& worker, const QString& workerResume);
  // After a refused job: removes what was written on the cluster, then onSlurmRejected() again;
  // false when nothing was written there.
  bool undoRemoteRun(const QString& line);
  void followRemoteSlurm();
  // A graceful stop: the stop file in the directory on the cluster over ssh, then the signal.
  void stopRemoteSlurm();
  QString remoteScriptName() const;  // login:/dir/job.sbatch

  SlurmJob* job_ = nullptr;
  bool job_ran_ = false;    // the job ran since it was submitted or last requeued
  int restarts_seen_ = -1;  // Slurm's restart count of the job when last said (-1: not yet)
  // What a refused submission puts back: the directory it created, or an earlier run's
  // status.json and metrics/ (moved aside so its rank files are not read again).
  bool created_dir_ = false;
  QByteArray old_status_;
  EarlierJobFiles moved_;
  // Through a login node: the run's directory on the cluster (resolved), and what a refused job
  // must undo there (written: spec.json and job.sbatch are there; created: the directory was
  // made; aside: where an earlier job's metrics/ and rank-N.log went).
  QString remote_dir_;
  bool remote_written_ = false;
  bool remote_created_ = false;
  QString remote_aside_;
  QString remote_logs_aside_;
};

}  // namespace ddpdesk

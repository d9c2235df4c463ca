// RunController following a Slurm run that some ddpdesk submitted (attach() of a directory whose
// slurm.json names a job; see run_controller.h): the job is tracked as the submitting controller
// tracks it (SlurmJob::track: squeue, then scontrol or sacct), the ranks' files are followed
// here or, for a job submitted through a login node, through an ssh mirror of its directory on
// the cluster, and the job's end ends the run (finalizeSlurm). stop()/kill() go to the job as
// for a submitted run (stopSlurm): ddpdesk submitted it, so it is ddpdesk's to stop, and on
// another node only Slurm can reach its ranks. When Slurm cannot tell (no squeue here, the job
// forgotten by slurmctld with no accounting to ask), the files alone end the run.
#include <QMetaObject>
#include <QStandardPaths>

#include "follow/run_follower.h"
#include "run/run_controller.h"
#include "slurm/cluster_command.h"
#include "slurm/slurm_job.h"
#include "ssh/ssh_target.h"

namespace ddpdesk {

void RunController::attachSlurm(const SlurmRecord& record) {
  setState(State::Starting);
  if (record.login.isEmpty() &&
      QStandardPaths::findExecutable(QStringLiteral("squeue")).isEmpty()) {
    // Said after attach() returns, so the caller's warning handler sees it.
    QMetaObject::invokeMethod(
        this,
        [this, id = record.jobId] {
          Q_EMIT warning(QStringLiteral("squeue is not on PATH, so job %1's state cannot be "
                                        "asked: the ranks' files alone end the run")
                             .arg(id));
        },
        Qt::QueuedConnection);
    newFollower();
    QString err;
    follower_->follow(run_dir_path_, &err);  // a directory, checked by attach()
    return;
  }
  slurm_ = newSlurmJob();
  if (!record.login.isEmpty()) {
    // The local record of a job submitted through a login node: the job and its files are there.
    spec_.slurm_login = record.login.toStdString();
    spec_.slurm_remote_dir = record.remoteDir.toStdString();
    slurm_remote_dir_ = record.remoteDir;
    slurm_->commands()->setRemote(SshTarget::fromLogin(record.login, {}));
    followRemoteSlurm();
  } else {
    slurm_remote_dir_.clear();
    newFollower();
    // The job's end, not the files', ends the run (finalizeSlurm).
    disconnect(follower_, &RunFollower::runEnded, this, &RunController::finalizeAttached);
    QString err;
    follower_->follow(run_dir_path_, &err);
  }
  launcher_status_ = QStringLiteral("job %1: asking Slurm").arg(record.jobId);
  slurm_->track(record.jobId);
}

void RunController::followFilesOnly(const QString& why) {
  slurm_->disconnect(this);
  slurm_->deleteLater();
  slurm_ = nullptr;
  launcher_status_.clear();
  Q_EMIT warning(why + QStringLiteral(": the ranks' files alone end the run"));
  if (!follower_) return;  // through a login node whose mirror could not start: nothing to read
  connect(follower_, &RunFollower::runEnded, this, &RunController::finalizeAttached);
  if (follower_->hasEnded()) finalizeAttached();
}

}  // namespace ddpdesk

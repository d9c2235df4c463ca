// SlurmBackend (slurm_backend.h) following a Slurm run that some ddpdesk submitted (attach() of a
// directory whose slurm.json names a job; see run_controller.h): the job is tracked as the
// submitting controller tracks it (SlurmJob::track: squeue, then scontrol or sacct), the ranks'
// files are followed here or, for a job submitted through a login node, through an ssh mirror of
// its directory on the cluster, and the job's end ends the run (finalizeSlurm). stop()/kill() go to
// the job as for a submitted run (stopSlurm): ddpdesk submitted it, so it is ddpdesk's to stop, and
// on another node only Slurm can reach its ranks. When Slurm cannot tell (no squeue here, the job
// forgotten by slurmctld with no accounting to ask), the files alone end the run.
#include <QFileInfo>
#include <QMetaObject>
#include <QStandardPaths>

#include "follow/run_follower.h"
#include "run/run_directory.h"
#include "slurm/cluster_command.h"
#include "slurm/slurm_backend.h"
#include "slurm/slurm_job.h"
#include "ssh/ssh_target.h"

namespace ddpdesk {

bool SlurmBackend::attach(const QString& where, QString*) {
  const QString path = QFileInfo(where).absoluteFilePath();  // a directory: run.attach() checked
  RunSpec spec;
  if (const auto r = RunDirectory::readRecord(path); r && r->specValid)
    spec = r->spec;  // started by ddpdesk: epochs and task for the progress line
  beginFollowingRecord(path, spec);
  const auto found = readSlurmRecord(path);  // run.attach() found it
  if (!found) return false;
  const SlurmRecord& record = *found;
  setState(State::Starting);
  if (record.login.isEmpty() &&
      QStandardPaths::findExecutable(QStringLiteral("squeue")).isEmpty()) {
    // Said after attach() returns, so the caller's warning handler sees it.
    QMetaObject::invokeMethod(
        this,
        [this, id = record.jobId] {
          Q_EMIT run().warning(QStringLiteral("squeue is not on PATH, so job %1's state cannot be "
                                              "asked: the ranks' files alone end the run")
                                   .arg(id));
        },
        Qt::QueuedConnection);
    newFollower(/*filesEndTheRun=*/true);
    QString err;
    follower_->follow(runDir(), &err);
    return true;
  }
  job_ = newSlurmJob();
  if (!record.login.isEmpty()) {
    // The local record of a job submitted through a login node: the job and its files are there.
    this->spec().slurm_login = record.login.toStdString();
    this->spec().slurm_remote_dir = record.remoteDir.toStdString();
    remote_dir_ = record.remoteDir;
    job_->commands()->setRemote(SshTarget::fromLogin(record.login, {}));
    followRemoteSlurm();
  } else {
    remote_dir_.clear();
    // The job's end, not the files', ends the run (finalizeSlurm).
    newFollower(/*filesEndTheRun=*/false);
    QString err;
    follower_->follow(runDir(), &err);
  }
  launcherStatus() = QStringLiteral("job %1: asking Slurm").arg(record.jobId);
  job_->track(record.jobId);
  return true;
}

void SlurmBackend::followFilesOnly(const QString& why) {
  job_->disconnect(this);
  job_->deleteLater();
  job_ = nullptr;
  launcherStatus().clear();
  Q_EMIT run().warning(why + QStringLiteral(": the ranks' files alone end the run"));
  if (!follower_) return;  // through a login node whose mirror could not start: nothing to read
  connect(follower_, &RunFollower::runEnded, this, &SlurmBackend::finalizeFollowed);
  if (follower_->hasEnded()) finalizeFollowed();
}

}  // namespace ddpdesk

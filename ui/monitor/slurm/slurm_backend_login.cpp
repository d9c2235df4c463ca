// SlurmBackend (slurm_backend.h) through a login node (spec.slurm_login): the run directory lives
// on the cluster and every Slurm tool runs there over ssh. Locally only the run's record is kept
// (spec.run_dir: spec.json naming the remote directory, metrics.jsonl, monitor.log, slurm.json,
// status.json), so the history lists it and --resume of it submits a new job from the remote
// checkpoint. Before sbatch, two ssh commands: one checks that sbatch is there and resolves the
// remote directory (writes nothing), one writes spec.json and job.sbatch there atomically; a
// refused job has both undone (slurm_login_scripts.h). The ranks' metrics files are followed
// through an SshRunMirror, as `--attach ssh://` follows them. A graceful stop creates the stop
// file there (DDPDESK_STOP_FILE) before the signal, as a local Slurm run does here. A spec
// resuming an ssh:// URL (login_resume.h) gets a new local record and its ranks resume from the
// directory there.
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTimer>
#include <memory>

#include "follow/run_follower.h"
#include "metrics/metrics_store.h"
#include "run/monitor_settings.h"
#include "run/run_directory.h"
#include "slurm/cluster_command.h"
#include "slurm/login_resume.h"
#include "slurm/slurm_backend.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_login_scripts.h"
#include "slurm/slurm_script.h"
#include "ssh/ssh_followed_backend.h"
#include "ssh/ssh_run_mirror.h"

namespace ddpdesk {
namespace {

// Once Slurm says the job ended, the mirror is up to a remote poll behind the ranks' files: two
// more complete polls bring their last lines, within this limit when the connection is slow.
constexpr int kLastPollsMs = 5000;

QString absolute(const std::string& path) {
  return QFileInfo(QString::fromStdString(path)).absoluteFilePath();
}

}  // namespace

QString SlurmBackend::remoteScriptName() const {
  return QString::fromStdString(spec().slurm_login) + QLatin1Char(':') +
         slurmScriptPath(remote_dir_);
}

bool SlurmBackend::startViaLogin(RunSpec spec, const QString& program, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  const QString path = spec.run_dir.empty()
                           ? RunDirectory::newRunPath(spec, QDateTime::currentDateTime())
                           : absolute(spec.run_dir);
  spec.run_dir = path.toStdString();
  // Resuming this record: the worker continues from the checkpoints in its remote directory.
  const QString resume = QString::fromStdString(spec.resume);
  const bool resumesRecord = !resume.isEmpty() && QFileInfo(resume).isDir() &&
                             QFileInfo(resume).absoluteFilePath() == path;
  if (resumesRecord && spec.slurm_remote_dir.empty())
    return fail(QStringLiteral("%1 does not name its directory on the cluster (slurm_remote_dir)")
                    .arg(resume));
  const QString remote = spec.slurm_remote_dir.empty()
                             ? QStringLiteral("~/ddpdesk-runs/") + QFileInfo(path).fileName()
                             : QString::fromStdString(spec.slurm_remote_dir);
  const bool created = !QFileInfo::exists(path);
  auto dir = std::make_unique<RunDirectory>();
  QString err;
  if (!dir->open(path, &err)) {
    dir.reset();
    if (created) QDir(path).removeRecursively();
    return fail(err);
  }
  const qint64 history = QFileInfo(RunDirectory::metricsPath(path)).size();
  rememberForUndo(path, created);
  beginRun(spec, std::move(dir), history, spec.world_size());
  remote_dir_.clear();
  remote_written_ = false;
  remote_created_ = false;
  remote_aside_.clear();
  remote_logs_aside_.clear();
  job_ = newSlurmJob();
  job_->commands()->setRemote(SshTarget::fromLogin(QString::fromStdString(spec.slurm_login), {}));
  const QString worker = monitorSettings().remoteWorker.isEmpty()
                             ? QFileInfo(program).absoluteFilePath()
                             : monitorSettings().remoteWorker;
  launcherStatus() =
      QStringLiteral("preparing %1 on %2").arg(remote, QString::fromStdString(spec.slurm_login));
  this->dir()->logEvent(launcherStatus());
  setState(State::Starting);
  job_->commands()->run(remoteResolveCommand(remote), [this,
                                                       worker](const ClusterCommand::Result& r) {
    const QString resolved = QString::fromUtf8(r.out).trimmed();
    if (!r.ok() || resolved.isEmpty()) {
      onSlurmRejected(r.ok() ? QStringLiteral("the login node printed no run directory")
                             : r.problem());
      return;
    }
    if (resolved.contains(QLatin1Char(' ')) || resolved.contains(QLatin1Char('\t'))) {
      onSlurmRejected(QStringLiteral("invalid slurm_remote_dir '%1': a Slurm run directory cannot "
                                     "contain blanks")
                          .arg(resolved));
      return;
    }
    writeRemoteRun(resolved, worker, loginWorkerResume(this->spec(), runDir(), resolved));
  });
  return true;
}

void SlurmBackend::writeRemoteRun(const QString& remoteDir, const QString& worker,
                                  const QString& workerResume) {
  remote_dir_ = remoteDir;
  spec().slurm_remote_dir = remoteDir.toStdString();  // the record resumes from there
  QString err;
  if (!dir()->writeSpec(spec(), &err)) {
    onSlurmRejected(err);
    return;
  }
  // What the ranks read there: the run directory and resume are the cluster's.
  RunSpec there = spec();
  there.run_dir = remoteDir.toStdString();
  there.resume = workerResume.toStdString();
  const QString script = slurmBatchScript(there, remoteDir, worker, workerResume);
  const QString stamp =
      QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz"));
  job_->commands()->run(
      remoteWriteCommand(remoteDir, stamp, QString::fromStdString(to_json_text(there))),
      [this](const ClusterCommand::Result& r) {
        const QStringList words =
            QString::fromUtf8(r.out).trimmed().split(QLatin1Char(' '), Qt::SkipEmptyParts);
        if (!r.ok() || words.size() != 3) {
          // The script removed what it made.
          onSlurmRejected(
              r.ok() ? QStringLiteral("the login node did not confirm %1").arg(remoteScriptName())
                     : QStringLiteral("cannot write %1: %2").arg(remoteScriptName(), r.problem()));
          return;
        }
        remote_written_ = true;
        remote_created_ = words[0] == QLatin1String("1");
        if (words[1] != QLatin1String("-")) remote_aside_ = words[1];
        if (words[2] != QLatin1String("-")) remote_logs_aside_ = words[2];
        dir()->forgetEnding();
        launcherStatus() = QStringLiteral("submitting %1").arg(remoteScriptName());
        dir()->logEvent(
            QStringLiteral("%1 a Slurm job of %2 rank(s) through %3: sbatch %4")
                .arg(spec().resume.empty() ? QStringLiteral("submitting")
                                           : QStringLiteral("resuming as"))
                .arg(spec().world_size())
                .arg(QString::fromStdString(spec().slurm_login), slurmScriptPath(remote_dir_)));
        job_->submit(slurmScriptPath(remote_dir_));
      },
      script.toUtf8());
}

bool SlurmBackend::undoRemoteRun(const QString& line) {
  if (!remote_written_) return false;
  remote_written_ = false;
  job_->commands()->run(
      remoteUndoCommand(remote_dir_, remote_created_, remote_aside_, remote_logs_aside_),
      [this, line](const ClusterCommand::Result& r) {
        if (!r.ok())
          Q_EMIT run().warning(QStringLiteral("could not remove what was written to %1: %2")
                                   .arg(remote_dir_, r.problem()));
        onSlurmRejected(line);
      });
  return true;
}

void SlurmBackend::stopRemoteSlurm() {
  SlurmJob* job = job_;
  job_->commands()->run(
      remoteStopCommand(remote_dir_), [this, job](const ClusterCommand::Result& r) {
        if (job_ != job) return;  // a later run's
        // Without the file the signal still reaches the running ranks.
        if (!r.ok())
          Q_EMIT run().warning(QStringLiteral("could not write %1 on %2: %3")
                                   .arg(slurmStopFilePath(remote_dir_),
                                        QString::fromStdString(spec().slurm_login), r.problem()));
        job_->stop();
      });
}

void SlurmBackend::followRemoteSlurm() {
  // The job's end, not the files', ends a Slurm run (finalizeSlurm).
  RunFollower* f = newFollower(/*filesEndTheRun=*/false);
  mirror_ = new SshRunMirror(
      SshTarget::fromLogin(QString::fromStdString(spec().slurm_login), remote_dir_), this);
  QString err;
  if (!mirror_->start(SshRunMirror::kPollMs, &err)) {
    Q_EMIT run().warning(err);
    delete mirror_;
    mirror_ = nullptr;
    return;
  }
  // A lost connection is worth a line; the job goes on, and squeue still says how it ends.
  connect(mirror_, &SshRunMirror::failed, &run(), &RunController::warning);
  followMirror(f, mirror_);
}

void SlurmBackend::onSlurmEnded(const SlurmJobStatus& s) {
  // A followed job Slurm has forgotten (long ended, no accounting): its files still tell.
  if (attached() && s.slurmState == QLatin1String("UNKNOWN")) {
    followFilesOnly(s.reason);
    return;
  }
  if (!mirror_ || !mirror_->isConnected()) {
    finalizeSlurm(s);
    return;
  }
  auto done = std::make_shared<bool>(false);
  auto polls = std::make_shared<int>(0);
  SlurmJob* job = job_;
  auto finish = [this, s, done, job] {
    if (*done || job_ != job) return;  // once, and not for a later run
    *done = true;
    finalizeSlurm(s);
  };
  connect(mirror_, &SshRunMirror::polled, this, [finish, polls] {
    if (++*polls >= 2) finish();
  });
  connect(mirror_, &SshRunMirror::failed, this, finish);
  QTimer::singleShot(kLastPollsMs, this, finish);
}

}  // namespace ddpdesk

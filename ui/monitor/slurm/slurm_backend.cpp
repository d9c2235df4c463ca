// SlurmBackend (slurm_backend.h), a Slurm run submitted from here: the run directory and its batch
// script, submission, following the job's state and its ranks' metrics files, stop/kill through
// scancel, and how it ended.
#include "slurm/slurm_backend.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <algorithm>

#include "exit_record.h"

#include "follow/run_follower.h"
#include "local/script_rank.h"
#include "metrics/metrics_store.h"
#include "run/atomic_file.h"
#include "run/run_directory.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_run_files.h"
#include "slurm/slurm_script.h"
#include "slurm/slurm_status.h"
#include "ssh/ssh_run_mirror.h"

namespace ddpdesk {
namespace {

constexpr int kTailLines = 10;  // of a failed rank's output

QStringList lastLines(const QString& path, int n) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  if (f.size() > 65536) f.seek(f.size() - 65536);
  QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  return lines.mid(std::max<int>(0, int(lines.size()) - n));
}

}  // namespace

SlurmBackend::SlurmBackend(RunController& run) : FollowedBackend(run) {}

SlurmBackend::~SlurmBackend() = default;

void SlurmBackend::stop() {
  if (job_)
    stopSlurm(/*graceful=*/true);
  else
    FollowedBackend::stop();  // followed by its files alone
}

void SlurmBackend::kill() {
  if (job_)
    stopSlurm(/*graceful=*/false);
  else
    FollowedBackend::kill();
}

void SlurmBackend::closing() {
  // A submitted Slurm job runs on without us (its directory can be followed again).
  if (job_ && dir())
    dir()->logEvent(QStringLiteral("the monitor was closed; job %1 goes on").arg(job_->jobId()));
}

void SlurmBackend::retire() {
  // The job is the next run's business no more: nothing it says reaches the controller.
  if (job_) job_->disconnect(this);
  job_ = nullptr;
  FollowedBackend::retire();
}

// What a refused job puts back: the record it made, or the earlier job's status.json.
void SlurmBackend::rememberForUndo(const QString& path, bool created) {
  created_dir_ = created;
  old_status_.clear();
  moved_ = EarlierJobFiles();
  if (created) return;
  QFile status(RunDirectory::statusPath(path));
  if (status.open(QIODevice::ReadOnly)) old_status_ = status.readAll();
}

SlurmJob* SlurmBackend::newSlurmJob() {
  job_ran_ = false;
  restarts_seen_ = -1;
  auto* job = new SlurmJob(this);
  connect(job, &SlurmJob::submitted, this, &SlurmBackend::onSlurmSubmitted);
  connect(job, &SlurmJob::submitFailed, this, &SlurmBackend::onSlurmRejected);
  connect(job, &SlurmJob::statusChanged, this, &SlurmBackend::onSlurmStatus);
  connect(job, &SlurmJob::ended, this, &SlurmBackend::onSlurmEnded);
  connect(job, &SlurmJob::warning, &run(), &RunController::warning);
  connect(job, &SlurmJob::stopSent, this, [this](bool wasPending) {
    if (dir())
      dir()->logEvent(wasPending ? QStringLiteral("the job was pending: scancel --state=PENDING")
                                 : QStringLiteral("the job's steps were signalled"));
  });
  return job;
}

bool SlurmBackend::start(const RunSpec& given, const QString& program, QString* error) {
  RunSpec spec = given;
  if (spec.is_slurm_via_login()) return startViaLogin(spec, program, error);
  makeScriptPathsAbsolute(spec);  // the ranks start in the run directory
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  const QString resume = QString::fromStdString(spec.resume);
  const QString path = spec.run_dir.empty()
                           ? RunDirectory::newRunPath(spec, QDateTime::currentDateTime())
                           : QFileInfo(QString::fromStdString(spec.run_dir)).absoluteFilePath();
  // sbatch reads #SBATCH lines without shell quoting: a blank would split --output's path.
  if (path.contains(QLatin1Char(' ')) || path.contains(QLatin1Char('\t')))
    return fail(QStringLiteral("invalid run_dir '%1': a Slurm run directory cannot contain blanks")
                    .arg(path));
  spec.run_dir = path.toStdString();
  const bool created = !QFileInfo::exists(path);
  auto dir = std::make_unique<RunDirectory>();
  QString err;
  auto undoCreate = [&] {
    dir.reset();
    if (created) QDir(path).removeRecursively();
  };
  if (!dir->create(spec, &err)) {
    undoCreate();
    return fail(err);
  }
  const qint64 history = QFileInfo(RunDirectory::metricsPath(path)).size();
  const QString script = slurmScriptPath(path);
  // An earlier job's stop must not stop this one's ranks as they start.
  QFile::remove(slurmStopFilePath(path));
  if (!dir->writeSpec(spec, &err) ||
      !writeFileAtomically(script, slurmBatchScript(spec, path, program, resume).toUtf8(), &err)) {
    undoCreate();
    return fail(err);
  }
  // A continued run: its earlier ranks' files would be read again as this job's (their messages
  // are in metrics.jsonl already, their output would replay in the Log tab). Moved aside (and
  // back if the job is refused).
  rememberForUndo(path, created);
  if (!created &&
      !moveEarlierJobAside(
          path, QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz")),
          &moved_, &err))
    return fail(err);
  dir->forgetEnding();

  beginRun(spec, std::move(dir), history, spec.world_size());
  job_ = newSlurmJob();
  launcherStatus() = QStringLiteral("submitting %1").arg(script);
  this->dir()->logEvent(
      QStringLiteral("%1 a Slurm job of %2 rank(s): sbatch %3")
          .arg(resume.isEmpty() ? QStringLiteral("submitting") : QStringLiteral("resuming as"))
          .arg(spec.world_size())
          .arg(script));
  setState(State::Starting);
  job_->submit(script);
  return true;
}

void SlurmBackend::onSlurmSubmitted(const QString& jobId) {
  QString err;
  // Through a login node the job's directory is on the cluster: the record names it.
  if (!writeSlurmRecord(
          runDir(), jobId,
          remote_dir_.isEmpty() ? QString() : QString::fromStdString(spec().slurm_login),
          remote_dir_, &err))
    Q_EMIT run().warning(err);
  dir()->logEvent(QStringLiteral("submitted as Slurm job %1").arg(jobId));
  launcherStatus() =
      QStringLiteral("job %1 submitted: batch script %2")
          .arg(jobId, remote_dir_.isEmpty() ? slurmScriptPath(runDir()) : remoteScriptName());
  Q_EMIT run().launcherStatusChanged(launcherStatus());
  Q_EMIT run().jobSubmitted(jobId);
  remote_written_ = false;  // the job owns what was written
  restarts_seen_ = 0;       // a new job: any requeue from now on is this run's restart
  if (!remote_dir_.isEmpty()) {
    followRemoteSlurm();
    if (stopRequested()) stopSlurm(true);
    return;
  }
  // The job's end, not the files', ends a Slurm run (finalizeSlurm).
  newFollower(/*filesEndTheRun=*/false);
  follower_->follow(runDir(), &err);
  // A stop asked for while sbatch was still answering.
  if (stopRequested()) stopSlurm(true);
}

void SlurmBackend::onSlurmRejected(const QString& line) {
  // Nothing ran: put the directory back as it was (gone, when this submission created it), on
  // the cluster first when a login node holds it.
  if (undoRemoteRun(line)) return;
  hasFailure() = true;
  failure() = RunController::Failure();
  failure().rejected = true;
  failure().what = line;
  dir()->close();
  if (created_dir_) {
    QDir(runDir()).removeRecursively();
  } else {
    QFile::remove(slurmScriptPath(runDir()));
    putEarlierJobBack(runDir(), moved_);
    if (!old_status_.isEmpty())
      writeFileAtomically(RunDirectory::statusPath(runDir()), old_status_);
    dir()->open(runDir());
    dir()->logEvent(QStringLiteral("the Slurm job was refused: ") + line);
    dir()->close();
  }
  launcherStatus() = QStringLiteral("refused by sbatch");
  endRun(State::Failed, line);
}

void SlurmBackend::onSlurmStatus(const SlurmJobStatus& s) {
  followRequeue(s);
  launcherStatus() = QStringLiteral("job %1 %2").arg(job_->jobId(), describeSlurmStatus(s));
  // A script's ranks need not say hello (no client): the job running is the ranks running.
  if (script_metrics_ && s.state == SlurmJobStatus::State::Running && state() == State::Starting)
    setState(State::Running);
  if (dir()) dir()->logEvent(launcherStatus());
  Q_EMIT run().launcherStatusChanged(launcherStatus());
}

void SlurmBackend::stopSlurm(bool graceful) {
  const bool viaLogin = spec().is_slurm_via_login();
  if (graceful && !viaLogin) {
    // First the file, then the signal: ranks running by then get the signal, and ranks that
    // start later (the batch shell had not reached srun, or srun's step was not up yet) find
    // the file (DDPDESK_STOP_FILE in the batch script) and stop at their first step boundary.
    QString err;
    if (!writeFileAtomically(slurmStopFilePath(runDir()), QByteArray(), &err))
      Q_EMIT run().warning(err);
  }
  const QString stopFile = viaLogin ? QString::fromStdString(spec().slurm_login) +
                                          QLatin1Char(':') + slurmStopFilePath(remote_dir_)
                                    : slurmStopFilePath(runDir());
  if (dir())
    dir()->logEvent(
        graceful ? QStringLiteral("stop requested: %1 and scancel --signal=TERM").arg(stopFile)
                 : QStringLiteral("kill requested: scancel"));
  if (state() == State::Starting || state() == State::Running) setState(State::Stopping);
  if (job_->jobId().isEmpty()) return;  // sbatch has not answered: onSlurmSubmitted stops it
  if (graceful && viaLogin)
    stopRemoteSlurm();  // the same order, the file written on the cluster over ssh
  else if (graceful)
    job_->stop();
  else
    job_->cancel();
}

void SlurmBackend::nameFailedSlurmRank() {
  // srun's own report in the job's output names the task that failed first and its node (a
  // worker rank out of memory before its peers, which fail because it is gone: srun lists
  // tasks that ended together in task order); else the rank that reported an error, else the
  // first that ended without a word.
  // Through a login node the ranks' files are read from the ssh mirror of the remote directory.
  const QString filesDir = mirror_ ? mirror_->directory() : runDir();
  QFile out(filesDir + QStringLiteral("/slurm-%1.out").arg(job_->jobId()));
  const TaskInfo* task = find_task(spec().task);
  const bool workerRanks = !(task && task->python_script);
  const QString batchOutput =
      out.open(QIODevice::ReadOnly) ? QString::fromLocal8Bit(out.readAll()) : QString();
  std::optional<SrunTaskError> srun = causeSrunTaskError(batchOutput, workerRanks);
  const auto& known = follower_->ranks();
  const RunFollower::Rank* culprit = nullptr;
  if (srun && known.count(srun->task)) culprit = &known.at(srun->task);
  for (const auto& [rank, r] : known)
    if (!culprit && r.lastWord == QLatin1String("error")) culprit = &r;
  for (const auto& [rank, r] : known)
    if (!culprit && r.lastWord.isEmpty()) culprit = &r;
  if (!culprit && !srun) return;
  // A culprit that failed because a peer was gone (its error names the peer, as the shared-memory
  // communicator's do) is not the cause when that peer failed too (its record says so, it is
  // gone from this host, or srun reports it): the peer is.
  if (culprit && culprit->errorPeer >= 0 && culprit->errorPeer != culprit->rank &&
      known.count(culprit->errorPeer)) {
    const RunFollower::Rank& peer = known.at(culprit->errorPeer);
    std::optional<SrunTaskError> peerLine;
    for (const SrunTaskError& e : srunTaskErrors(batchOutput))
      if (e.task == peer.rank && !peerLine) peerLine = e;
    if (peer.failed() || peerLine) {
      culprit = &peer;
      srun = peerLine;
    }
  }
  failure().rank = culprit ? culprit->rank : srun->task;
  failure().node =
      srun ? srun->node : QString::fromStdString(culprit ? culprit->info.host : std::string());
  if (culprit) failure().errorMessage = culprit->error;
  failure().stderrTail = lastLines(slurmRankOutputPath(filesDir, failure().rank), kTailLines);
  QString how = srun ? srun->what : QStringLiteral("failed");
  if (!srun && culprit && culprit->lastWord.isEmpty()) how = QStringLiteral("ended without a word");
  failure().what =
      QStringLiteral("rank %1%2: %3")
          .arg(failure().rank)
          .arg(failure().node.isEmpty() ? QString() : QStringLiteral(" on ") + failure().node)
          .arg(how);
}

void SlurmBackend::finalizeSlurm(const SlurmJobStatus& s) {
  using S = SlurmJobStatus::State;
  launcherStatus() = QStringLiteral("job %1 %2").arg(job_->jobId(), describeSlurmStatus(s));
  Q_EMIT run().launcherStatusChanged(launcherStatus());
  if (follower_) {
    follower_->pollNow();  // the ranks' last lines
    follower_->stop();
  }
  finishMeasuring();
  if (mirror_) mirror_->stop();  // no ssh outlives the run
  store()->flush();
  const RunProgress progress = store()->progress();
  bool anyStopped = false, anyError = false;
  if (follower_)
    for (const auto& [rank, r] : follower_->ranks()) {
      if (r.lastWord == QLatin1String("stopped")) anyStopped = true;
      if (r.lastWord == QLatin1String("error")) anyError = true;
    }
  const QString job = QStringLiteral("job %1").arg(job_->jobId());
  State final = State::Finished;
  QString why;
  // Ranks that a stop's signal ended (a script without the client) did what was asked.
  const bool stoppedBySignal = stopRequested() && endedByStopSignal(s);
  if ((s.state == S::Failed && !stoppedBySignal) || anyError ||
      (s.state == S::Cancelled && !stopRequested()) || (s.state == S::TimedOut && !anyStopped)) {
    final = State::Failed;
    hasFailure() = true;
    failure().what = job + QLatin1Char(' ') + describeSlurmStatus(s);
    if (s.state == S::Cancelled)
      failure().what += attached() ? QStringLiteral(" (not from this monitor)")
                                   : QStringLiteral(" outside ddpdesk");
    if (!s.reason.isEmpty() && s.slurmState == QLatin1String("UNKNOWN")) failure().what = s.reason;
    if (follower_ && s.state != S::Cancelled) nameFailedSlurmRank();
    why = failure().what;
    if (failure().rank >= 0)
      why += QStringLiteral(" (job %1 %2)").arg(job_->jobId(), describeSlurmStatus(s));
    if (!failure().errorMessage.isEmpty()) why += QStringLiteral(": ") + failure().errorMessage;
    if (!failure().stderrTail.isEmpty())
      why += QStringLiteral("\nlast lines of rank %1's output (%2):\n  ")
                 .arg(failure().rank)
                 .arg(slurmRankOutputPath(spec().is_slurm_via_login() ? remote_dir_ : runDir(),
                                          failure().rank)) +
             failure().stderrTail.join(QStringLiteral("\n  "));
  } else if (s.state == S::TimedOut) {
    final = State::Stopped;
    why =
        job +
        QStringLiteral(" reached its time limit; the ranks stopped at step %1").arg(progress.step);
  } else if (s.state == S::Cancelled) {
    final = State::Stopped;
    const bool noRank = !follower_ || follower_->ranks().empty();
    why = noRank ? job + QStringLiteral(
                             " was cancelled before its ranks started: nothing was "
                             "trained")
                 : job + QStringLiteral(" was cancelled by the user at step %1").arg(progress.step);
  } else if (stopRequested() || anyStopped) {
    final = State::Stopped;
    why = stopRequested() ? QStringLiteral("stopped by the user at step %1").arg(progress.step)
                          : QStringLiteral(
                                "the ranks stopped at step %1 (signalled from outside the "
                                "monitor)")
                                .arg(progress.step);
  }
  RunStatus st;
  // Each rank's own exit code where it left its exit record (an out-of-memory's 3); srun's
  // report holds only the job's.
  const std::string filesDir = (mirror_ ? mirror_->directory() : runDir()).toStdString();
  for (const RankState& r : ranks()) {
    const auto record = read_exit_record(exit_record_path(filesDir, r.rank));
    st.exitCodes.append(record ? record->exit_code : r.exitCode);
    st.termSignals.append(0);
  }
  if (follower_) {
    st.malformedLines = follower_->counters().malformed;
    st.ignoredLines = follower_->counters().ignored;
  }
  endRun(final, why, st,
         QStringLiteral("%1 ended: %2 (told by %3); ").arg(job, s.slurmState, job_->endSource()));
}

}  // namespace ddpdesk

// RunController's Slurm launcher: the run directory and its batch script, submission, following
// the job's state and its ranks' metrics files, stop/kill through scancel, and how it ended.
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <algorithm>

#include "follow/run_follower.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "run/atomic_file.h"
#include "run/run_controller.h"
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

void RunController::beginSlurmRun(const RunSpec& spec, std::unique_ptr<RunDirectory> dir,
                                  qint64 history) {
  spec_ = spec;
  dir_ = std::move(dir);
  run_dir_path_ = dir_->path();
  resetRun(spec.world_size());
  // A continued run: its earlier messages first (large ones on a worker thread).
  if (history > async_load_bytes_) {
    store_->loadJsonlAsync(RunDirectory::metricsPath(run_dir_path_));
  } else if (history > 0) {
    store_->loadJsonl(RunDirectory::metricsPath(run_dir_path_));
    store_->setWorld(spec.world_size());
  }
}

// What a refused job puts back: the record it made, or the earlier job's status.json.
void RunController::rememberForUndo(const QString& path, bool created) {
  slurm_created_dir_ = created;
  slurm_old_status_.clear();
  slurm_moved_ = EarlierJobFiles();
  if (created) return;
  QFile status(RunDirectory::statusPath(path));
  if (status.open(QIODevice::ReadOnly)) slurm_old_status_ = status.readAll();
}

SlurmJob* RunController::newSlurmJob() {
  auto* job = new SlurmJob(this);
  connect(job, &SlurmJob::submitted, this, &RunController::onSlurmSubmitted);
  connect(job, &SlurmJob::submitFailed, this, &RunController::onSlurmRejected);
  connect(job, &SlurmJob::statusChanged, this, &RunController::onSlurmStatus);
  connect(job, &SlurmJob::ended, this, &RunController::onSlurmEnded);
  connect(job, &SlurmJob::warning, this, &RunController::warning);
  connect(job, &SlurmJob::stopSent, this, [this](bool wasPending) {
    if (dir_)
      dir_->logEvent(wasPending ? QStringLiteral("the job was pending: scancel --state=PENDING")
                                : QStringLiteral("the job's steps were signalled"));
  });
  return job;
}

bool RunController::startSlurm(RunSpec spec, const QString& program, QString* error) {
  if (spec.is_slurm_via_login()) return startSlurmViaLogin(spec, program, error);
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
          &slurm_moved_, &err))
    return fail(err);
  dir->forgetEnding();

  beginSlurmRun(spec, std::move(dir), history);
  slurm_ = newSlurmJob();
  launcher_status_ = QStringLiteral("submitting %1").arg(script);
  dir_->logEvent(
      QStringLiteral("%1 a Slurm job of %2 rank(s): sbatch %3")
          .arg(resume.isEmpty() ? QStringLiteral("submitting") : QStringLiteral("resuming as"))
          .arg(spec.world_size())
          .arg(script));
  setState(State::Starting);
  slurm_->submit(script);
  return true;
}

void RunController::onSlurmSubmitted(const QString& jobId) {
  QString err;
  // Through a login node the job's directory is on the cluster: the record names it.
  if (!writeSlurmRecord(
          run_dir_path_, jobId,
          slurm_remote_dir_.isEmpty() ? QString() : QString::fromStdString(spec_.slurm_login),
          slurm_remote_dir_, &err))
    Q_EMIT warning(err);
  dir_->logEvent(QStringLiteral("submitted as Slurm job %1").arg(jobId));
  launcher_status_ = QStringLiteral("job %1 submitted: batch script %2")
                         .arg(jobId, slurm_remote_dir_.isEmpty() ? slurmScriptPath(run_dir_path_)
                                                                 : remoteScriptName());
  Q_EMIT launcherStatusChanged(launcher_status_);
  Q_EMIT jobSubmitted(jobId);
  slurm_remote_written_ = false;  // the job owns what was written
  if (!slurm_remote_dir_.isEmpty()) {
    followRemoteSlurm();
    if (stop_requested_) stopSlurm(true);
    return;
  }
  newFollower();
  // The job's end, not the files', ends a Slurm run (finalizeSlurm).
  disconnect(follower_, &RunFollower::runEnded, this, &RunController::finalizeAttached);
  follower_->follow(run_dir_path_, &err);
  // A stop asked for while sbatch was still answering.
  if (stop_requested_) stopSlurm(true);
}

void RunController::onSlurmRejected(const QString& line) {
  // Nothing ran: put the directory back as it was (gone, when this submission created it), on
  // the cluster first when a login node holds it.
  if (undoRemoteRun(line)) return;
  has_failure_ = true;
  failure_ = Failure();
  failure_.rejected = true;
  failure_.what = line;
  reason_ = line;
  dir_->close();
  if (slurm_created_dir_) {
    QDir(run_dir_path_).removeRecursively();
  } else {
    QFile::remove(slurmScriptPath(run_dir_path_));
    putEarlierJobBack(run_dir_path_, slurm_moved_);
    if (!slurm_old_status_.isEmpty())
      writeFileAtomically(RunDirectory::statusPath(run_dir_path_), slurm_old_status_);
    dir_->open(run_dir_path_);
    dir_->logEvent(QStringLiteral("the Slurm job was refused: ") + line);
    dir_->close();
  }
  launcher_status_ = QStringLiteral("refused by sbatch");
  ended_at_ = QDateTime::currentDateTime();
  setState(State::Failed);
}

void RunController::onSlurmStatus(const SlurmJobStatus& s) {
  launcher_status_ = QStringLiteral("job %1 %2").arg(slurm_->jobId(), describeSlurmStatus(s));
  if (dir_) dir_->logEvent(launcher_status_);
  Q_EMIT launcherStatusChanged(launcher_status_);
}

void RunController::stopSlurm(bool graceful) {
  const bool viaLogin = spec_.is_slurm_via_login();
  if (graceful && !viaLogin) {
    // First the file, then the signal: ranks running by then get the signal, and ranks that
    // start later (the batch shell had not reached srun, or srun's step was not up yet) find
    // the file (DDPDESK_STOP_FILE in the batch script) and stop at their first step boundary.
    QString err;
    if (!writeFileAtomically(slurmStopFilePath(run_dir_path_), QByteArray(), &err))
      Q_EMIT warning(err);
  }
  const QString stopFile = viaLogin ? QString::fromStdString(spec_.slurm_login) + QLatin1Char(':') +
                                          slurmStopFilePath(slurm_remote_dir_)
                                    : slurmStopFilePath(run_dir_path_);
  if (dir_)
    dir_->logEvent(
        graceful ? QStringLiteral("stop requested: %1 and scancel --signal=TERM").arg(stopFile)
                 : QStringLiteral("kill requested: scancel"));
  if (state_ == State::Starting || state_ == State::Running) setState(State::Stopping);
  if (slurm_->jobId().isEmpty()) return;  // sbatch has not answered: onSlurmSubmitted stops it
  if (graceful && viaLogin)
    stopRemoteSlurm();  // the same order, the file written on the cluster over ssh
  else if (graceful)
    slurm_->stop();
  else
    slurm_->cancel();
}

void RunController::nameFailedSlurmRank() {
  // srun's own report in the job's output names the task that failed first and its node; else
  // the rank that reported an error, else the first that ended without a word.
  // Through a login node the ranks' files are read from the ssh mirror of the remote directory.
  const QString filesDir = mirror_ ? mirror_->directory() : run_dir_path_;
  QFile out(filesDir + QStringLiteral("/slurm-%1.out").arg(slurm_->jobId()));
  const auto srun = out.open(QIODevice::ReadOnly)
                        ? firstSrunTaskError(QString::fromLocal8Bit(out.readAll()))
                        : std::nullopt;
  const auto& known = follower_->ranks();
  const RunFollower::Rank* culprit = nullptr;
  if (srun && known.count(srun->task)) culprit = &known.at(srun->task);
  for (const auto& [rank, r] : known)
    if (!culprit && r.lastWord == QLatin1String("error")) culprit = &r;
  for (const auto& [rank, r] : known)
    if (!culprit && r.lastWord.isEmpty()) culprit = &r;
  if (!culprit && !srun) return;
  failure_.rank = culprit ? culprit->rank : srun->task;
  failure_.node =
      srun ? srun->node : QString::fromStdString(culprit ? culprit->info.host : std::string());
  if (culprit) failure_.errorMessage = culprit->error;
  failure_.stderrTail = lastLines(slurmRankOutputPath(filesDir, failure_.rank), kTailLines);
  QString how = srun ? srun->what : QStringLiteral("failed");
  if (!srun && culprit && culprit->lastWord.isEmpty()) how = QStringLiteral("ended without a word");
  failure_.what =
      QStringLiteral("rank %1%2: %3")
          .arg(failure_.rank)
          .arg(failure_.node.isEmpty() ? QString() : QStringLiteral(" on ") + failure_.node)
          .arg(how);
}

void RunController::finalizeSlurm(const SlurmJobStatus& s) {
  using S = SlurmJobStatus::State;
  launcher_status_ = QStringLiteral("job %1 %2").arg(slurm_->jobId(), describeSlurmStatus(s));
  Q_EMIT launcherStatusChanged(launcher_status_);
  if (follower_) {
    follower_->pollNow();  // the ranks' last lines
    follower_->stop();
  }
  if (mirror_) mirror_->stop();  // no ssh outlives the run
  store_->flush();
  const RunProgress progress = store_->progress();
  bool anyStopped = false, anyError = false;
  if (follower_)
    for (const auto& [rank, r] : follower_->ranks()) {
      if (r.lastWord == QLatin1String("stopped")) anyStopped = true;
      if (r.lastWord == QLatin1String("error")) anyError = true;
    }
  const QString job = QStringLiteral("job %1").arg(slurm_->jobId());
  State final = State::Finished;
  if (s.state == S::Failed || anyError || (s.state == S::Cancelled && !stop_requested_) ||
      (s.state == S::TimedOut && !anyStopped)) {
    final = State::Failed;
    has_failure_ = true;
    failure_.what = job + QLatin1Char(' ') + describeSlurmStatus(s);
    if (s.state == S::Cancelled)
      failure_.what += attached_ ? QStringLiteral(" (not from this monitor)")
                                 : QStringLiteral(" outside ddpdesk");
    if (!s.reason.isEmpty() && s.slurmState == QLatin1String("UNKNOWN")) failure_.what = s.reason;
    if (follower_ && s.state != S::Cancelled) nameFailedSlurmRank();
    reason_ = failure_.what;
    if (failure_.rank >= 0)
      reason_ += QStringLiteral(" (job %1 %2)").arg(slurm_->jobId(), describeSlurmStatus(s));
    if (!failure_.errorMessage.isEmpty()) reason_ += QStringLiteral(": ") + failure_.errorMessage;
    if (!failure_.stderrTail.isEmpty())
      reason_ +=
          QStringLiteral("\nlast lines of rank %1's output (%2):\n  ")
              .arg(failure_.rank)
              .arg(slurmRankOutputPath(
                  spec_.is_slurm_via_login() ? slurm_remote_dir_ : run_dir_path_, failure_.rank)) +
          failure_.stderrTail.join(QStringLiteral("\n  "));
  } else if (s.state == S::TimedOut) {
    final = State::Stopped;
    reason_ =
        job +
        QStringLiteral(" reached its time limit; the ranks stopped at step %1").arg(progress.step);
  } else if (s.state == S::Cancelled) {
    final = State::Stopped;
    const bool noRank = !follower_ || follower_->ranks().empty();
    reason_ =
        noRank ? job + QStringLiteral(
                           " was cancelled before its ranks started: nothing was "
                           "trained")
               : job + QStringLiteral(" was cancelled by the user at step %1").arg(progress.step);
  } else if (stop_requested_ || anyStopped) {
    final = State::Stopped;
    reason_ = stop_requested_ ? QStringLiteral("stopped by the user at step %1").arg(progress.step)
                              : QStringLiteral(
                                    "the ranks stopped at step %1 (signalled from outside the "
                                    "monitor)")
                                    .arg(progress.step);
  }
  ended_at_ = QDateTime::currentDateTime();
  if (dir_) {
    RunStatus st;
    st.state = stateName(final);
    st.reason = reason_;
    for (const RankState& r : followedRanks()) {
      st.exitCodes.append(r.exitCode);
      st.termSignals.append(0);
    }
    st.startedAt = started_at_;
    st.endedAt = ended_at_;
    st.lastStep = progress.step;
    st.totalSteps = progress.totalSteps;
    st.lastLoss = progress.globalLoss;
    if (follower_) {
      st.malformedLines = follower_->counters().malformed;
      st.ignoredLines = follower_->counters().ignored;
    }
    QString err;
    if (!dir_->writeStatus(st, &err)) Q_EMIT warning(err);
    dir_->logEvent(QStringLiteral("%1 ended: %2 (told by %3); run %4: %5")
                       .arg(job, s.slurmState, slurm_->endSource(), st.state,
                            st.reason.isEmpty() ? QStringLiteral("-") : st.reason));
    dir_->close();
  }
  setState(final);
}

}  // namespace ddpdesk

// RunController's side of following a run directory it did not start (attach(DIR)): the
// RunFollower that reads the ranks' metrics files, the world its hellos name, the rank table of
// followed ranks, and how a followed run ends. The remote case is run_controller_remote.cpp.
#include <QDateTime>
#include <QFileInfo>

#include "follow/run_follower.h"
#include "metrics/metrics_store.h"
#include "run/monitor_settings.h"
#include "run/run_controller.h"
#include "run/run_directory.h"
#include "ssh/ssh_run_mirror.h"

namespace ddpdesk {

std::vector<RunController::RankState> RunController::followedRanks() const {
  std::vector<RankState> out;
  const auto& known = follower_->ranks();
  for (int k = 0; k < worldSize(); ++k) {
    RankState r;
    r.rank = k;
    auto it = known.find(k);
    if (it != known.end()) {
      const RunFollower::Rank& f = it->second;
      r.pid = f.info.pid;
      r.connected = f.hello;
      r.running = f.hello && !f.ended();
      r.exited = f.ended();
      r.crashed = f.gone && f.lastWord.isEmpty();
      r.exitCode = !f.ended() || r.crashed ? -1 : f.failed() ? 1 : 0;
      r.exitText = f.describe();
      if (f.silent && !f.ended()) r.silence = f.describe();
    }
    out.push_back(r);
  }
  return out;
}

bool RunController::attach(const QString& runDir, QString* error) {
  if (isActive()) {
    if (error) *error = QStringLiteral("a run is already active");
    return false;
  }
  if (SshTarget::looksLikeUrl(runDir)) {
    if (!attachRemote(runDir, error)) return false;
    attached_ = true;
    return true;
  }
  if (!QFileInfo(runDir).isDir()) {
    if (error) *error = QStringLiteral("invalid --attach '%1': not a directory").arg(runDir);
    return false;
  }
  attached_ = true;
  dir_.reset();  // nothing is written into a followed directory
  run_dir_path_ = QFileInfo(runDir).absoluteFilePath();
  spec_ = RunSpec();
  if (const auto record = RunDirectory::readRecord(run_dir_path_); record && record->specValid)
    spec_ = record->spec;  // started by ddpdesk: epochs and task for the progress line
  spec_.run_dir = run_dir_path_.toStdString();
  resetRun(0);
  spec_.nproc = 0;
  if (const auto job = readSlurmRecord(run_dir_path_)) {
    attachSlurm(*job);
    return true;
  }
  newFollower();
  setState(State::Starting);
  QString err;
  follower_->follow(run_dir_path_, &err);  // a directory, checked above
  return true;
}

RunFollower* RunController::newFollower() {
  follower_ = new RunFollower(this);
  connect(follower_, &RunFollower::helloReceived, this, &RunController::onFollowedHello);
  connect(follower_, &RunFollower::messagesReceived, this, &RunController::onMessages);
  connect(follower_, &RunFollower::malformedLines, this,
          [this](int rank, int count, const QString& why) {
            Q_EMIT warning(QStringLiteral("rank %1's file has %2 malformed line(s): %3")
                               .arg(rank)
                               .arg(count)
                               .arg(why));
          });
  connect(follower_, &RunFollower::rankRestarted, this, [this](int rank, const QString& why) {
    // Over ssh the mirror's copy is always replaced; the remote side saw what really happened.
    const QString remote = mirror_ ? mirror_->stream().resetReason(rank) : QString();
    Q_EMIT warning(QStringLiteral("rank %1's metrics file was %2: reading it from its start")
                       .arg(rank)
                       .arg(remote.isEmpty() ? why : remote));
  });
  // The ranks' rank-N.log (stdout and stderr together) in the Log tab, as for a local run.
  connect(follower_, &RunFollower::outputLine, this,
          [this](int rank, const QString& line) { Q_EMIT logLine(rank, false, line); });
  connect(follower_, &RunFollower::rankEnded, this,
          [this](int rank, const QString& how) { Q_EMIT rankExited(rank, how); });
  connect(follower_, &RunFollower::runEnded, this, &RunController::finalizeAttached);
  // A rank that went quiet: on another node its death cannot be seen here (no pid to check),
  // so silence past the limit is shown instead of Running forever: the run is marked stalled.
  follower_->setSilentLimit(monitorSettings().silentRankSeconds * 1000);
  connect(follower_, &RunFollower::rankSilent, this, [this](int rank, qint64 seconds) {
    const RunFollower::Rank& r = follower_->ranks().at(rank);
    Q_EMIT warning(QStringLiteral("rank %1 (pid %2 on %3) has been silent for %4 s: the run may "
                                  "be stalled, or the rank gone where its pid cannot be checked")
                       .arg(rank)
                       .arg(r.info.pid)
                       .arg(QString::fromStdString(r.info.host))
                       .arg(seconds));
    if (!slurm_) launcher_status_ = QStringLiteral("stalled: rank %1 silent").arg(rank);
  });
  connect(follower_, &RunFollower::rankHeardAgain, this, [this](int rank) {
    const bool anySilent = std::any_of(follower_->ranks().begin(), follower_->ranks().end(),
                                       [](const auto& kv) { return kv.second.silent; });
    if (!slurm_ && !anySilent) launcher_status_.clear();
    Q_EMIT launcherStatusChanged(QStringLiteral("rank %1 is heard from again").arg(rank));
  });
  return follower_;
}

void RunController::onFollowedHello(const wire::Hello& h) {
  growWorld(std::max(h.world, h.rank + 1));
  connected_[h.rank] = true;
  Q_EMIT rankStarted(h.rank, h.pid);
  Q_EMIT rankConnected(h.rank);
  const bool all = std::all_of(connected_.begin(), connected_.end(), [](bool b) { return b; });
  if (all && state_ == State::Starting) setState(State::Running);
}

void RunController::finalizeAttached() {
  store_->flush();
  const RunProgress progress = store_->progress();
  State final = State::Finished;
  bool anyStopped = false;
  for (const auto& [rank, r] : follower_->ranks()) {
    if (r.lastWord == QLatin1String("stopped")) anyStopped = true;
    if (stop_requested_ && r.gone && r.lastWord.isEmpty()) {
      anyStopped = true;  // killed from here: what we did to it is not its failure
      continue;
    }
    if (!r.failed() || has_failure_) continue;
    has_failure_ = true;
    failure_.rank = rank;
    failure_.exitCode = r.gone && r.lastWord.isEmpty() ? -1 : 1;
    failure_.what =
        QStringLiteral("rank %1 %2")
            .arg(rank)
            .arg(r.gone && r.lastWord.isEmpty() ? r.describe() : QStringLiteral("failed"));
    failure_.errorMessage = r.error;
    failure_.stderrTail = follower_->outputTail(rank);
  }
  if (has_failure_) {
    final = State::Failed;
    reason_ = failure_.what;
    if (!failure_.errorMessage.isEmpty()) reason_ += QStringLiteral(": ") + failure_.errorMessage;
    if (!failure_.stderrTail.isEmpty())
      reason_ +=
          QStringLiteral("\nlast lines of rank %1's output (rank-%1.log):\n  ").arg(failure_.rank) +
          failure_.stderrTail.join(QStringLiteral("\n  "));
  } else if (anyStopped) {
    final = State::Stopped;
    reason_ = stop_requested_ ? QStringLiteral("stopped by the user at step %1").arg(progress.step)
                              : QStringLiteral("the ranks stopped at step %1").arg(progress.step);
  }
  ended_at_ = QDateTime::currentDateTime();
  setState(final);
}

}  // namespace ddpdesk

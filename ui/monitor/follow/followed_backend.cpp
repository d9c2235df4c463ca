// FollowedBackend (followed_backend.h): the RunFollower that reads the ranks' metrics files, the
// world its hellos name, the rank table of followed ranks, stopping the ranks on this host, and
// how a followed run ends.
#include "follow/followed_backend.h"

#include <QFileInfo>
#include <QTimer>
#include <algorithm>
#include <csignal>
#include <optional>

#include "follow/run_follower.h"
#include "metrics/metrics_store.h"
#include "metrics/script_metrics.h"
#include "run/monitor_settings.h"
#include "run/run_directory.h"
#include "ssh/ssh_run_mirror.h"

namespace ddpdesk {
namespace {

constexpr int kRecordedEndingPollMs = 500;

// The end state a status.json records (as RunController::stateName wrote it).
std::optional<RunController::State> recordedState(const QString& name) {
  using State = RunController::State;
  for (State s : {State::Finished, State::Stopped, State::Failed})
    if (name == RunController::stateName(s)) return s;
  return std::nullopt;
}

}  // namespace

FollowedBackend::FollowedBackend(RunController& run) : RunBackend(run) {}

FollowedBackend::~FollowedBackend() = default;

bool FollowedBackend::attach(const QString& where, QString*) {
  const QString path = QFileInfo(where).absoluteFilePath();  // a directory: run.attach() checked
  RunSpec spec;
  if (const auto record = RunDirectory::readRecord(path); record && record->specValid)
    spec = record->spec;  // started by ddpdesk: epochs and task for the progress line
  beginFollowingRecord(path, spec);
  newFollower(/*filesEndTheRun=*/true);
  setState(State::Starting);
  QString err;
  follower_->follow(path, &err);
  return true;
}

void FollowedBackend::beginFollowingRecord(const QString& path, const RunSpec& spec) {
  recorded_world_ = spec.world_size();
  beginFollowing(path, spec);
}

void FollowedBackend::stop() {
  // A graceful stop: the ranks vote, checkpoint and write "stopped".
  if (signalRanks(SIGTERM) && (state() == State::Starting || state() == State::Running))
    setState(State::Stopping);
}

void FollowedBackend::kill() {
  signalRanks(SIGKILL);  // their pids vanish: the follower ends the run
}

void FollowedBackend::retire() {
  delete script_metrics_;
  script_metrics_ = nullptr;
  if (follower_) {
    follower_->disconnect(this);
    follower_->stop();
  }
  if (mirror_) {
    mirror_->disconnect(this);
    mirror_->stop();
  }
}

bool FollowedBackend::signalRanks(int signo) {
  if (follower_ && follower_->signalLocalRanks(signo) > 0) return true;
  Q_EMIT run().warning(
      QStringLiteral("no rank of this run runs on this host: stop it where it runs"));
  return false;
}

std::vector<RunBackend::RankState> FollowedBackend::ranks() const {
  std::vector<RankState> out;
  if (!follower_) return out;
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

RunFollower* FollowedBackend::newFollower(bool filesEndTheRun) {
  follower_ = new RunFollower(this);
  // A job's end ends the run, and a requeued job's ranks write again after they ended.
  follower_->setFollowAfterEnd(!filesEndTheRun);
  RunController* c = &run();
  connect(follower_, &RunFollower::helloReceived, this, &FollowedBackend::onFollowedHello);
  connect(
      follower_, &RunFollower::messagesReceived, this,
      [this](const std::vector<wire::Message>& m, const QByteArray& lines) { ingest(m, lines); });
  connect(follower_, &RunFollower::malformedLines, this,
          [c](int rank, int count, const QString& why) {
            Q_EMIT c->warning(QStringLiteral("rank %1's file has %2 malformed line(s): %3")
                                  .arg(rank)
                                  .arg(count)
                                  .arg(why));
          });
  connect(follower_, &RunFollower::rankRestarted, this, [this, c](int rank, const QString& why) {
    // Over ssh the mirror's copy is always replaced; the remote side saw what really happened.
    const QString remote = mirror_ ? mirror_->stream().resetReason(rank) : QString();
    Q_EMIT c->warning(QStringLiteral("rank %1's metrics file was %2: reading it from its start")
                          .arg(rank)
                          .arg(remote.isEmpty() ? why : remote));
  });
  // The ranks' rank-N.log (stdout and stderr together) in the Log tab, as for a local run.
  connect(follower_, &RunFollower::outputLine, this,
          [c](int rank, const QString& line) { Q_EMIT c->logLine(rank, false, line); });
  connect(follower_, &RunFollower::rankEnded, this,
          [c](int rank, const QString& how) { Q_EMIT c->rankExited(rank, how); });
  if (filesEndTheRun)
    connect(follower_, &RunFollower::runEnded, this, &FollowedBackend::finalizeFollowed);
  if (const TaskInfo* task = find_task(spec().task); task && task->python_script) {
    // Its ranks may never say hello (no client): the world is the spec's from the start.
    RunSpec measured = spec();
    if (spec().world_size() < recorded_world_) measured.nproc = recorded_world_;
    growWorld(measured.world_size());
    delete script_metrics_;
    script_metrics_ = new ScriptMetrics(
        measured, runDir(),
        [this](int rank) {
          const auto& known = follower_->ranks();
          const auto it = known.find(rank);
          return it != known.end() && it->second.hello;
        },
        [this](int rank) { return std::int64_t(store()->rankInfo(rank).step); },
        [this](const std::vector<wire::Message>& messages) { ingestMeasured(messages); }, this);
    connect(follower_, &RunFollower::outputLine, script_metrics_,
            [m = script_metrics_](int rank, const QString& line) { m->line(rank, line); });
    if (filesEndTheRun) watchRecordedEnding();
  }
  // A rank that went quiet: on another node its death cannot be seen here (no pid to check),
  // so silence past the limit is shown instead of Running forever: the run is marked stalled.
  follower_->setSilentLimit(monitorSettings().silentRankSeconds * 1000);
  connect(follower_, &RunFollower::rankSilent, this, [this, c](int rank, qint64 seconds) {
    const RunFollower::Rank& r = follower_->ranks().at(rank);
    const QString why = QStringLiteral(
                            "rank %1 (pid %2 on %3) has been silent for %4 s: the run "
                            "may be stalled, or the rank gone where its pid cannot be "
                            "checked")
                            .arg(rank)
                            .arg(r.info.pid)
                            .arg(QString::fromStdString(r.info.host))
                            .arg(seconds);
    Q_EMIT c->warning(why);
    // The run stalls when its first rank goes quiet; more of them are the same stall.
    const bool othersSilent =
        std::any_of(follower_->ranks().begin(), follower_->ranks().end(),
                    [rank](const auto& kv) { return kv.first != rank && kv.second.silent; });
    if (!othersSilent) Q_EMIT c->stalled(why);
    if (!ownsLauncherStatus())
      launcherStatus() = QStringLiteral("stalled: rank %1 silent").arg(rank);
  });
  connect(follower_, &RunFollower::rankHeardAgain, this, [this, c](int rank) {
    const bool anySilent = std::any_of(follower_->ranks().begin(), follower_->ranks().end(),
                                       [](const auto& kv) { return kv.second.silent; });
    if (!ownsLauncherStatus() && !anySilent) launcherStatus().clear();
    Q_EMIT c->launcherStatusChanged(QStringLiteral("rank %1 is heard from again").arg(rank));
  });
  return follower_;
}

void FollowedBackend::onFollowedHello(const wire::Hello& h) {
  growWorld(std::max(h.world, h.rank + 1));
  Q_EMIT run().rankStarted(h.rank, h.pid);
  rankConnectedNow(h.rank);
}

void FollowedBackend::watchRecordedEnding() {
  auto* timer = new QTimer(script_metrics_);  // gone with the measuring
  timer->setInterval(kRecordedEndingPollMs);
  connect(timer, &QTimer::timeout, this, [this, timer] {
    // Over ssh, the mirror's copy (the remote loop sends status.json).
    const std::optional<RunStatus> status =
        RunDirectory::readStatus(mirror_ ? mirror_->directory() : runDir());
    if (!status || !follower_ || follower_->hasEnded()) return;
    const std::optional<State> final = recordedState(status->state);
    if (!final) return;
    timer->stop();
    follower_->pollNow();  // the ranks' last lines
    follower_->stop();
    finishMeasuring();
    store()->flush();
    if (*final == State::Failed) {
      hasFailure() = true;
      failure().what = status->reason.section(QLatin1Char('\n'), 0, 0);
    }
    endRun(*final, status->reason);
  });
  timer->start();
}

void FollowedBackend::finishMeasuring() {
  if (script_metrics_) script_metrics_->finish();
}

void FollowedBackend::finalizeFollowed() {
  finishMeasuring();
  store()->flush();
  const RunProgress progress = store()->progress();
  State final = State::Finished;
  QString why;
  bool anyStopped = false;
  RunController::Failure& f = failure();
  for (const auto& [rank, r] : follower_->ranks()) {
    if (r.lastWord == QLatin1String("stopped")) anyStopped = true;
    if (stopRequested() && r.gone && r.lastWord.isEmpty()) {
      anyStopped = true;  // killed from here: what we did to it is not its failure
      continue;
    }
    if (!r.failed() || hasFailure()) continue;
    hasFailure() = true;
    f.rank = rank;
    f.exitCode = r.gone && r.lastWord.isEmpty() ? -1 : 1;
    f.what = QStringLiteral("rank %1 %2")
                 .arg(rank)
                 .arg(r.gone && r.lastWord.isEmpty() ? r.describe() : QStringLiteral("failed"));
    f.errorMessage = r.error;
    f.stderrTail = follower_->outputTail(rank);
  }
  if (hasFailure()) {
    final = State::Failed;
    why = f.what;
    if (!f.errorMessage.isEmpty()) why += QStringLiteral(": ") + f.errorMessage;
    if (!f.stderrTail.isEmpty())
      why += QStringLiteral("\nlast lines of rank %1's output (rank-%1.log):\n  ").arg(f.rank) +
             f.stderrTail.join(QStringLiteral("\n  "));
  } else if (anyStopped) {
    final = State::Stopped;
    why = stopRequested() ? QStringLiteral("stopped by the user at step %1").arg(progress.step)
                          : QStringLiteral("the ranks stopped at step %1").arg(progress.step);
  }
  endRun(final, why);
}

}  // namespace ddpdesk

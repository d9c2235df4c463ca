// How a local run ends (RunController, run_controller.h): a rank's exit judged as the run's
// failure or as what the controller did to it, the wait for the last messages on the ranks'
// sockets, then the final state, its reason and status.json.
#include <QDateTime>
#include <csignal>

#include "local/local_rank_launcher.h"
#include "local/rank_process.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "run/run_controller.h"
#include "run/run_directory.h"

namespace ddpdesk {
namespace {

// After the last rank exits its socket may still hold its final messages; wait this long at
// most for every connection to close before deciding how the run ended.
constexpr int kDrainMs = 3000;

}  // namespace

void RunController::recordFailure(const RankProcess& p) {
  has_failure_ = true;
  const auto& x = p.exitInfo();
  failure_.rank = p.rank();
  failure_.exitCode = x.crashed || x.startFailed ? -1 : x.exitCode;
  failure_.signal = x.crashed ? x.signal : 0;
  failure_.what = QStringLiteral("rank %1 %2").arg(p.rank()).arg(p.describeExit());
  failure_.errorMessage = rank_errors_[p.rank()];
  failure_.stderrTail = p.stderrTail();
}

void RunController::onRankFinished(int rank) {
  RankProcess* p = local_->rank(rank);
  const auto& x = p->exitInfo();
  Q_EMIT rankExited(rank, p->describeExit());
  if (dir_)
    dir_->logEvent(
        QStringLiteral("rank %1 (pid %2) %3").arg(rank).arg(p->pid()).arg(p->describeExit()));
  // What we did to it ourselves is not its failure: SIGKILL after the grace period, a worker
  // dying of the SIGTERM we sent before its handler was installed, or one exiting 128+SIGTERM
  // because another signal reached it too (the worker's "second signal: exit now").
  const bool ourSignal =
      (x.crashed && (x.killedByUs || (term_sent_ && x.signal == SIGTERM))) ||
      (!x.crashed && term_sent_ && (x.exitCode == 128 + SIGTERM || x.exitCode == 128 + SIGINT));
  const bool bad = !ourSignal && (x.startFailed || x.crashed || x.exitCode != 0);
  if (bad && !has_failure_) {
    recordFailure(*p);
    beginStopping();
  }
  maybeFinish();
}

void RunController::maybeFinish() {
  if (!local_->allExited()) return;
  grace_timer_.stop();
  if (draining_) return;
  draining_ = true;
  if (server_->connectionCount() == 0)
    finalize();
  else
    drain_timer_.start(kDrainMs);
}

void RunController::finalize() {
  if (!draining_) return;
  draining_ = false;
  drain_timer_.stop();
  store_->flush();

  QStringList killed;
  bool anyStopped = false;
  for (const RankProcess* p : local_->ranks()) {
    if (p->exitInfo().killedByUs) killed << QString::number(p->rank());
    if (rank_stopped_[p->rank()]) anyStopped = true;
  }
  State final = State::Finished;
  if (has_failure_) {
    final = State::Failed;
    // The rank's last words may have arrived on its socket after its exit was seen.
    if (failure_.errorMessage.isEmpty()) failure_.errorMessage = rank_errors_[failure_.rank];
    reason_ = failure_.what;
    if (!failure_.errorMessage.isEmpty()) reason_ += QStringLiteral(": ") + failure_.errorMessage;
    if (!failure_.stderrTail.isEmpty())
      reason_ += QStringLiteral("\nlast stderr lines of rank %1:\n  ").arg(failure_.rank) +
                 failure_.stderrTail.join(QStringLiteral("\n  "));
  } else if (stop_requested_ || anyStopped || !killed.isEmpty()) {
    final = State::Stopped;
    const RunProgress progress = store_->progress();
    reason_ = stop_requested_ ? QStringLiteral("stopped by the user at step %1").arg(progress.step)
                              : QStringLiteral(
                                    "the ranks stopped at step %1 (signalled from "
                                    "outside the monitor)")
                                    .arg(progress.step);
    if (!killed.isEmpty())
      reason_ +=
          QStringLiteral("; rank(s) %1 had to be killed").arg(killed.join(QStringLiteral(", ")));
  }
  ended_at_ = QDateTime::currentDateTime();

  if (dir_) {
    RunStatus s;
    s.state = stateName(final);
    s.reason = reason_;
    for (const RankProcess* p : local_->ranks()) {
      const auto& x = p->exitInfo();
      s.exitCodes.append(x.crashed || x.startFailed ? -1 : x.exitCode);
      s.termSignals.append(x.crashed ? x.signal : 0);
    }
    s.startedAt = started_at_;
    s.endedAt = ended_at_;
    const RunProgress progress = store_->progress();
    s.lastStep = progress.step;
    s.totalSteps = progress.totalSteps;
    s.lastLoss = progress.globalLoss;
    s.malformedLines = server_->counters().malformed;
    s.ignoredLines = server_->counters().ignored;
    s.unknownFields = server_->counters().unknownFields;
    s.droppedConnections = server_->counters().dropped;
    QString err;
    if (!dir_->writeStatus(s, &err)) Q_EMIT warning(err);
    dir_->logEvent(QStringLiteral("run %1: %2")
                       .arg(s.state, s.reason.isEmpty() ? QStringLiteral("-") : s.reason));
    dir_->close();
  }
  server_->close();
  setState(final);
}

}  // namespace ddpdesk

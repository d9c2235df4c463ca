// How every run ends (RunController, run_controller.h): the backend says in which state and why
// (run_backend.h); here the run's status.json and the last line of its monitor.log are written,
// its directory and socket closed, the spec's on_end command started, and the state entered, once
// per run.
#include <QDateTime>

#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "run/end_command.h"
#include "run/run_controller.h"
#include "run/run_directory.h"

namespace ddpdesk {

void RunController::endRun(State final, const QString& reason, RunStatus status,
                           const QString& logPrefix) {
  if (!isActive()) return;
  reason_ = reason;
  grace_timer_.stop();
  store_->flush();
  ended_at_ = QDateTime::currentDateTime();
  if (dir_ && dir_->isOpen()) {
    const RunProgress progress = store_->progress();
    status.state = stateName(final);
    status.reason = reason_;
    status.startedAt = started_at_;
    status.endedAt = ended_at_;
    status.lastStep = progress.step;
    status.totalSteps = progress.totalSteps;
    status.lastLoss = progress.globalLoss;
    status.restarts = restarts_;
    // A half line a killed monitor left, ended as this run began, is one malformed line too.
    status.malformedLines += dir_->endedHalfLines();
    status.metricsIncomplete = metrics_incomplete_;
    QString err;
    if (!dir_->writeStatus(status, &err)) Q_EMIT warning(err);
    dir_->logEvent(logPrefix +
                   QStringLiteral("run %1: %2")
                       .arg(status.state, reason_.isEmpty() ? QStringLiteral("-") : reason_));
    dir_->close();
  }
  server_->close();
  if (!spec_.on_end.empty()) {
    RunEnding ending;
    ending.runDir = run_dir_path_;
    ending.runName = runName();
    ending.status = stateName(final);
    ending.exitCode = runExitCode(ending.status, failure_.rejected, stop_signal_);
    ending.reason = reason_;
    end_commands_->start(QString::fromStdString(spec_.on_end), ending);
  }
  setState(final);
}

}  // namespace ddpdesk

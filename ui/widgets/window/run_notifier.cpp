// RunNotifier (run_notifier.h): which run events become desktop notifications, and their words.
#include "window/run_notifier.h"

#include <QDateTime>

#include "metrics/metrics_store.h"
#include "run/progress_text.h"
#include "window/desktop_notifications.h"

namespace ddpdesk {
namespace {

QString firstLine(const QString& text) {
  return text.section(QLatin1Char('\n'), 0, 0).trimmed();
}

}  // namespace

RunNotifier::RunNotifier(RunController* controller, DesktopNotifications* notifications,
                         QObject* parent)
    : QObject(parent), controller_(controller), notifications_(notifications) {
  connect(controller_, &RunController::stateChanged, this,
          [this](RunController::State s) { onState(s); });
  connect(controller_, &RunController::stalled, this, &RunNotifier::runStalled);
  connect(controller_, &RunController::restarting, this, &RunNotifier::restarting);
}

void RunNotifier::onState(RunController::State state) {
  if (state == RunController::State::Starting) {
    stall_said_ = non_finite_said_ = false;
    return;
  }
  if (!RunController::isTerminal(state)) return;
  if (state == RunController::State::Stopped && controller_->stopRequested()) return;
  const qint64 secs = controller_->startedAt().secsTo(controller_->endedAt());
  if (watched() && secs < long_run_s_) return;

  const QString name = controller_->runName();
  const QString reason = firstLine(controller_->reason());
  if (state == RunController::State::Finished) {
    const RunProgress p = controller_->store()->progress();
    QString body = tr("%1 steps in %2").arg(p.step).arg(formatDuration(double(secs)));
    if (p.step > 0) body += tr(", loss %1").arg(formatLoss(p.globalLoss));
    notifications_->notify(tr("ddpdesk: %1 finished").arg(name), body);
  } else if (state == RunController::State::Failed) {
    notifications_->notify(tr("ddpdesk: %1 failed").arg(name), reason, true);
  } else {
    notifications_->notify(tr("ddpdesk: %1 stopped").arg(name), reason);
  }
}

void RunNotifier::notifyMidRun(const QString& what, const QString& body, bool critical) {
  if (watched()) return;
  notifications_->notify(tr("ddpdesk: %1 %2").arg(controller_->runName(), what), body, critical);
}

void RunNotifier::runStalled(const QString& why) {
  if (stall_said_ || !controller_->isActive()) return;
  stall_said_ = true;
  notifyMidRun(tr("stalled"), firstLine(why), true);
}

void RunNotifier::lossNotFinite(qint64 step) {
  if (non_finite_said_ || !controller_->isActive()) return;
  non_finite_said_ = true;
  if (watched()) return;
  notifications_->notify(
      tr("ddpdesk: %1: non-finite loss at step %2").arg(controller_->runName()).arg(step),
      tr("the loss is NaN or infinite; the run goes on"), true);
}

void RunNotifier::restarting(int attempt, int maxRestarts, const QString& cause) {
  const QString what = maxRestarts > 0 ? tr("restarting (%1 of %2)").arg(attempt).arg(maxRestarts)
                                       : tr("restarting (%1)").arg(attempt);  // Slurm requeued it
  notifyMidRun(what, firstLine(cause), false);
}

}  // namespace ddpdesk

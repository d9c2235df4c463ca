#include "live/run_status_strip.h"

#include <QAction>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QToolButton>
#include <cmath>

#include "metrics/metrics_store.h"
#include "run/progress_text.h"

namespace ddpdesk {
namespace {

QString stateColor(RunController::State s) {
  switch (s) {
    case RunController::State::Starting:
    case RunController::State::Stopping:
      return QStringLiteral("#b7950b");
    case RunController::State::Running:
      return QStringLiteral("#1e8449");
    case RunController::State::Failed:
      return QStringLiteral("#c0392b");
    default:
      return QStringLiteral("#555");
  }
}

QToolButton* button(QAction* action, QWidget* parent) {
  auto* b = new QToolButton(parent);
  b->setDefaultAction(action);
  b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  b->setMinimumWidth(72);
  return b;
}

}  // namespace

RunStatusStrip::RunStatusStrip(QAction* start, QAction* stop, QAction* stacks, QWidget* parent)
    : QWidget(parent) {
  auto* h = new QHBoxLayout(this);
  h->setContentsMargins(4, 2, 4, 2);
  h->addWidget(button(start, this));
  h->addWidget(button(stop, this));
  if (stacks) h->addWidget(button(stacks, this));
  state_ = new QLabel(this);
  state_->setMinimumWidth(90);
  h->addWidget(state_);
  elapsed_ = new QLabel(this);
  elapsed_->setToolTip(tr("Wall time since the ranks were launched"));
  h->addWidget(elapsed_);
  progress_ = new QProgressBar(this);
  progress_->setFormat(progressBarFormat(0, false));
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setMinimumWidth(150);  // "step 1418 / 1880 (75%)" on one line
  h->addWidget(progress_, 1);
  eta_ = new QLabel(this);
  eta_->setMinimumWidth(64);
  eta_->setToolTip(tr("Estimated time left, from the recent step rate"));
  h->addWidget(eta_);
  loss_ = new QLabel(this);
  h->addWidget(loss_);
}

double RunStatusStrip::elapsedSeconds(const RunController& c) {
  if (!c.startedAt().isValid()) return -1;
  const QDateTime end = c.endedAt().isValid() ? c.endedAt() : QDateTime::currentDateTime();
  return c.startedAt().msecsTo(end) / 1000.0;
}

void RunStatusStrip::refresh(const RunController& c) {
  const RunController::State s = c.state();
  QString state =
      QStringLiteral("<b style='color:%1'>%2</b>").arg(stateColor(s), RunController::stateName(s));
  // A Slurm run: what Slurm says of its job ("job 42 pending (Resources)").
  if (!c.launcherStatus().isEmpty())
    state += QStringLiteral(" · ") + c.launcherStatus().toHtmlEscaped();
  state_->setText(state);
  const double secs = elapsedSeconds(c);
  elapsed_->setText(secs < 0 ? QString() : tr("elapsed %1").arg(formatDuration(secs)));
  const RunProgress p = c.store()->progress();
  progress_->setFormat(progressBarFormat(p.totalSteps, c.isActive()));
  // How the ranks started: a resume's checkpoint, --fit-batch's micro-batch and accumulation.
  progress_->setToolTip(startedDetail(*c.store()));
  if (p.totalSteps > 0) {
    progress_->setRange(0, int(std::min<qint64>(p.totalSteps, INT_MAX)));
    progress_->setValue(int(std::min(p.step, p.totalSteps)));
  } else {
    // Unknown length: an empty bar saying "starting…" or "no run" (a busy bar would show no
    // text at all).
    progress_->setRange(0, 1);
    progress_->setValue(0);
  }
  eta_->setText(c.isActive() && p.etaSeconds >= 0 ? tr("ETA %1").arg(formatDuration(p.etaSeconds))
                                                  : QString());
  QString loss;
  if (!std::isnan(p.globalLoss)) loss = tr("loss %1").arg(formatLoss(p.globalLoss));
  if (!std::isnan(p.evalAccuracy))
    loss += tr("  val. acc. %1%").arg(p.evalAccuracy * 100.0, 0, 'f', 1);
  loss_->setText(loss);
}

QString RunStatusStrip::stateText() const {
  return state_->text();
}
QString RunStatusStrip::elapsedText() const {
  return elapsed_->text();
}
QString RunStatusStrip::etaText() const {
  return eta_->text();
}

}  // namespace ddpdesk

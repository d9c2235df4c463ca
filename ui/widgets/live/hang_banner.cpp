#include "live/hang_banner.h"

#include <QDesktopServices>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QUrl>

namespace ddpdesk {

HangBanner::HangBanner(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("hangBanner"));
  setStyleSheet(QStringLiteral(
      "QFrame#hangBanner { background: #fde7e7; border: 1px solid #d04040; border-radius: 3px; }"
      " QFrame#hangBanner QLabel { color: #7a1010; }"));
  auto* h = new QHBoxLayout(this);
  h->setContentsMargins(6, 3, 6, 3);
  label_ = new QLabel(this);
  label_->setWordWrap(true);
  label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  h->addWidget(label_, 1);
  open_button_ = new QPushButton(tr("Open stacks"), this);
  open_button_->setToolTip(
      tr("Every rank's stack, the verdict first (the stacks file in the run "
         "directory)"));
  h->addWidget(open_button_);
  connect(open_button_, &QPushButton::clicked, this, &HangBanner::openStacks);
  open_ = [](const QString& path) { QDesktopServices::openUrl(QUrl::fromLocalFile(path)); };
  setVisible(false);
}

void HangBanner::showVerdict(const QString& why, const QString& verdict, const QString& path,
                             qint64 step) {
  why_ = why;
  verdict_ = verdict;
  path_ = path;
  step_ = step;
  resumed_ = false;
  render();
}

void HangBanner::noteStep(qint64 step) {
  if (verdict_.isEmpty() || why_.isEmpty() || resumed_ || step <= step_) return;
  resumed_ = true;
  render();
}

void HangBanner::reset() {
  why_.clear();
  verdict_.clear();
  path_.clear();
  step_ = -1;
  resumed_ = false;
  render();
}

void HangBanner::openStacks() const {
  if (!path_.isEmpty() && open_) open_(path_);
}

QString HangBanner::text() const {
  return label_->text();
}

void HangBanner::render() {
  if (verdict_.isEmpty()) {
    label_->clear();
    setVisible(false);
    return;
  }
  const QString heading = why_.isEmpty() ? tr("Stacks:")
                          : resumed_     ? tr("Was stalled (stepping again):")
                                         : tr("Stalled:");
  QString html = QStringLiteral("<b>%1</b> %2").arg(heading, verdict_.toHtmlEscaped());
  if (!why_.isEmpty()) html += QStringLiteral("<br><small>%1</small>").arg(why_.toHtmlEscaped());
  label_->setText(html);
  label_->setToolTip(path_);
  open_button_->setEnabled(!path_.isEmpty());
  setVisible(true);
}

}  // namespace ddpdesk

#include "live/straggler_banner.h"

#include "metrics/straggler_watch.h"

namespace ddpdesk {

StragglerBanner::StragglerBanner(QWidget* parent) : QLabel(parent) {
  setObjectName(QStringLiteral("stragglerBanner"));
  setWordWrap(true);
  setTextInteractionFlags(Qt::TextSelectableByMouse);
  setStyleSheet(QStringLiteral(
      "QLabel#stragglerBanner { background: #fff4d6; color: #6b4a00; border: 1px solid #e0a000;"
      " border-radius: 3px; padding: 4px 6px; }"));
  setToolTip(
      tr("Every optimizer step waits for the slowest rank: the others spend the difference "
         "blocked in communication (wait ms in the Ranks tab, red in the Time chart)"));
  setVisible(false);
}

void StragglerBanner::setWatch(const StragglerWatch* watch) {
  disconnect(conn_);
  watch_ = watch;
  if (watch) conn_ = connect(watch, &StragglerWatch::changed, this, &StragglerBanner::refresh);
  refresh();
}

void StragglerBanner::setRunEnded(bool ended) {
  if (ended == ended_) return;
  ended_ = ended;
  refresh();
}

void StragglerBanner::refresh() {
  summary_ = watch_ ? watch_->summary() : QString();
  if (summary_.isEmpty()) {
    clear();
    setVisible(false);
    return;
  }
  QStringList lines;
  for (const QString& l : summary_.split(QLatin1Char('\n'))) lines << l.toHtmlEscaped();
  const QString heading = ended_ ? tr("Straggler when the run ended:") : tr("Straggler:");
  setText(QStringLiteral("<b>%1</b> %2").arg(heading, lines.join(QStringLiteral("<br>"))));
  setVisible(true);
}

}  // namespace ddpdesk

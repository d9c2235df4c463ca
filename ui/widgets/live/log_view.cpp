#include "live/log_view.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QTextCursor>
#include <QVBoxLayout>

namespace ddpdesk {

namespace {
constexpr int kMaxBlocks = 20000;  // lines kept on screen; the buffer keeps more for refilters
constexpr int kBannerLines = 6;    // stderr lines of a failed rank shown in the banner
// Lines put on screen per flush (20 a second: 10,000 lines/s). A script printing faster
// cannot be read there anyway, and laying out every line of 100,000 a second took the GUI
// thread more than a core: the surplus of a flush is skipped on screen with a count (kept in
// the buffer, shown again by a refilter; and every rank's output is whole in its rank-N.log).
constexpr int kMaxLinesPerFlush = 500;
}  // namespace

void LogBuffer::append(int rank, bool isStderr, const QString& text) {
  lines_.push_back({rank, isStderr, text});
  while (lines_.size() > capacity_) lines_.pop_front();
}

QString LogBuffer::format(const Line& line) {
  return line.rank == kMonitor ? QStringLiteral("[monitor] ") + line.text
                               : QStringLiteral("[rank %1] ").arg(line.rank) + line.text;
}

QStringList LogBuffer::filtered(int filter) const {
  QStringList out;
  for (const Line& l : lines_)
    if (matches(l, filter)) out << format(l);
  return out;
}

LogView::LogView(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  banner_ = new QLabel(this);
  banner_->setObjectName(QStringLiteral("failureBanner"));
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->setStyleSheet(QStringLiteral(
      "QLabel#failureBanner { background: #fdecea; color: #7b1d12; border: 1px solid #c0392b;"
      " border-radius: 3px; padding: 6px; }"));
  banner_->setVisible(false);
  v->addWidget(banner_);

  auto* bar = new QHBoxLayout();
  bar->addWidget(new QLabel(tr("Show:"), this));
  filter_ = new QComboBox(this);
  filter_->setObjectName(QStringLiteral("rankFilter"));
  filter_->addItem(tr("all ranks"), LogBuffer::kAll);
  filter_->addItem(tr("monitor"), LogBuffer::kMonitor);
  connect(filter_, &QComboBox::currentIndexChanged, this, [this] { refill(); });
  bar->addWidget(filter_);
  bar->addStretch(1);
  auto* clearButton = new QPushButton(tr("Clear"), this);
  connect(clearButton, &QPushButton::clicked, this, &LogView::clear);
  bar->addWidget(clearButton);
  v->addLayout(bar);

  text_ = new QPlainTextEdit(this);
  text_->setReadOnly(true);
  text_->setMaximumBlockCount(kMaxBlocks);
  text_->setLineWrapMode(QPlainTextEdit::NoWrap);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  v->addWidget(text_, 1);

  // Often and small rather than rarely and big: a chatty run's lines never block the event loop
  // for long at once.
  timer_.setInterval(50);
  connect(&timer_, &QTimer::timeout, this, &LogView::flush);
  timer_.start();
}

void LogView::appendLine(int rank, bool isStderr, const QString& text) {
  buffer_.append(rank, isStderr, text);
  pending_.push_back({rank, isStderr, text});
  // A burst larger than the screen keeps only what the screen would keep.
  while (pending_.size() > std::size_t(kMaxBlocks)) pending_.pop_front();
}

void LogView::setWorld(int world) {
  const int current = filter();
  while (filter_->count() > 2) filter_->removeItem(filter_->count() - 1);
  for (int r = 0; r < world; ++r) filter_->addItem(tr("rank %1").arg(r), r);
  setFilter(current);
}

void LogView::setFilter(int rank) {
  const int i = filter_->findData(rank);
  filter_->setCurrentIndex(i >= 0 ? i : 0);
}

int LogView::filter() const {
  return filter_->currentData().toInt();
}

void LogView::clear() {
  buffer_.clear();
  pending_.clear();
  text_->clear();
}

void LogView::flush() {
  if (pending_.empty()) return;
  const int f = filter();
  QStringList lines;
  for (const auto& l : pending_)
    if (LogBuffer::matches(l, f)) lines << LogBuffer::format(l);
  pending_.clear();
  if (lines.isEmpty()) return;
  if (lines.size() > kMaxLinesPerFlush) {
    const qsizetype skipped = lines.size() - kMaxLinesPerFlush;
    lines = lines.mid(skipped);
    lines.prepend(LogBuffer::format(
        {LogBuffer::kMonitor, false,
         tr("… %1 lines not shown: more than the screen can show (every rank's output is in "
            "rank-N.log in the run directory)")
             .arg(skipped)}));
  }
  QScrollBar* sb = text_->verticalScrollBar();
  const bool atEnd = sb->value() == sb->maximum();
  text_->appendPlainText(lines.join(QLatin1Char('\n')));
  if (atEnd) sb->setValue(sb->maximum());  // follow the tail unless the user scrolled up
}

void LogView::refill() {
  pending_.clear();
  QStringList lines = buffer_.filtered(filter());
  if (lines.size() > kMaxBlocks) lines = lines.mid(lines.size() - kMaxBlocks);
  text_->setPlainText(lines.join(QLatin1Char('\n')));
  text_->moveCursor(QTextCursor::End);  // scrolls once the new text is laid out
  text_->ensureCursorVisible();
}

QString LogView::visibleText() const {
  return text_->toPlainText();
}

void LogView::showFailure(const QString& title, const QString& reason) {
  const QString first = reason.section(QLatin1Char('\n'), 0, 0);
  // The last lines only: the banner must leave room for the log, which has the rest.
  QStringList rest = reason.section(QLatin1Char('\n'), 1).split(QLatin1Char('\n'));
  if (rest.size() > kBannerLines + 1)
    rest = QStringList{rest.front(), QStringLiteral("  …")} + rest.mid(rest.size() - kBannerLines);
  QString html = QStringLiteral("<b>%1</b>: %2").arg(title.toHtmlEscaped(), first.toHtmlEscaped());
  const QString tail = rest.join(QLatin1Char('\n'));
  if (!tail.trimmed().isEmpty())
    html += QStringLiteral("<pre style='margin:4px 0 0 0'>%1</pre>").arg(tail.toHtmlEscaped());
  banner_->setText(html);
  banner_->setToolTip(reason);
  banner_->setVisible(true);
}

void LogView::clearFailure() {
  banner_->clear();
  banner_->setVisible(false);
}

bool LogView::failureShown() const {
  return !banner_->isHidden();
}

QString LogView::failureText() const {
  return banner_->toolTip();
}

}  // namespace ddpdesk

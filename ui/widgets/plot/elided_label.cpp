#include "plot/elided_label.h"

#include <QPainter>
#include <algorithm>

namespace ddpdesk {

ElidedLabel::ElidedLabel(const QString& text, QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  setText(text);
}

void ElidedLabel::setText(const QString& text) {
  // One line: a line break or tab in the text is drawn as a space.
  text_ = text;
  for (QChar& c : text_)
    if (c == QLatin1Char('\n') || c == QLatin1Char('\r') || c == QLatin1Char('\t'))
      c = QLatin1Char(' ');
  updateGeometry();
  updateToolTip();
  update();
}

QString ElidedLabel::shownText() const {
  return fontMetrics().elidedText(text_, Qt::ElideMiddle, width());
}

QSize ElidedLabel::sizeHint() const {
  const QFontMetrics fm = fontMetrics();
  return {fm.horizontalAdvance(text_) + 2, fm.height()};
}

QSize ElidedLabel::minimumSizeHint() const {
  const QFontMetrics fm = fontMetrics();
  return {std::min(sizeHint().width(), fm.horizontalAdvance(QStringLiteral("MM…"))), fm.height()};
}

void ElidedLabel::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(rect(), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextSingleLine, shownText());
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  updateToolTip();
}

void ElidedLabel::updateToolTip() {
  // Whole in the tooltip once it is cut (as plain text: a tooltip would read "<b>" as HTML).
  const bool cut = shownText() != text_;
  setToolTip(cut ? QStringLiteral("<p style='white-space:pre'>%1</p>").arg(text_.toHtmlEscaped())
                 : QString());
}

}  // namespace ddpdesk

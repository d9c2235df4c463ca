// EventMarks (event_marks.h): a dashed line and a small label per mark.
#include "plot/event_marks.h"

#include <qcustomplot.h>

namespace ddpdesk {
namespace {

const QColor kMarkColor(192, 57, 43);  // the colour of errors elsewhere in the window

}  // namespace

bool EventMarks::show(const std::vector<ChartMark>& marks) {
  bool same = marks.size() == shown_.size();
  for (std::size_t i = 0; same && i < marks.size(); ++i)
    same = marks[i].x == shown_[i].x && marks[i].label == shown_[i].label;
  if (same) return false;
  while (lines_.size() < marks.size()) {
    auto* line = new QCPItemStraightLine(plot_);
    QPen pen(kMarkColor);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    line->setSelectable(false);
    lines_.push_back(line);
    auto* text = new QCPItemText(plot_);
    text->setColor(kMarkColor);
    text->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    text->setTextAlignment(Qt::AlignLeft);
    text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    text->setPadding(QMargins(3, 2, 3, 2));
    text->setSelectable(false);
    texts_.push_back(text);
  }
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    const bool on = i < marks.size();
    lines_[i]->setVisible(on);
    texts_[i]->setVisible(on);
    if (!on) continue;
    lines_[i]->point1->setCoords(marks[i].x, 0);
    lines_[i]->point2->setCoords(marks[i].x, 1);
    texts_[i]->position->setCoords(marks[i].x, 0.0);
    texts_[i]->setText(marks[i].label);
  }
  shown_ = marks;
  return true;
}

void EventMarks::align() {
  const QRect area = plot_->axisRect()->rect();
  for (std::size_t i = 0; i < shown_.size() && i < texts_.size(); ++i) {
    QCPItemText* text = texts_[i];
    const double px = plot_->xAxis->coordToPixel(shown_[i].x);
    const QMargins pad = text->padding();
    const int width = QFontMetrics(text->font()).boundingRect(QRect(), 0, shown_[i].label).width() +
                      pad.left() + pad.right();
    const bool left = px + width > area.right() && px - width >= area.left();
    text->setPositionAlignment((left ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
    text->setTextAlignment(left ? Qt::AlignRight : Qt::AlignLeft);
  }
}

}  // namespace ddpdesk

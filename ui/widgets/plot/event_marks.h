// EventMarks: vertical lines across a chart at the moments a run's record marks (a restart from
// the checkpoint, docs/recovery.md), each labelled at the top. The chart says where they are on
// its x axis; this class keeps one line and one label per mark on the plot, reusing them, each
// label on the side of its line where it fits.
#pragma once

#include <QString>
#include <vector>

class QCustomPlot;
class QCPItemStraightLine;
class QCPItemText;

namespace ddpdesk {

struct ChartMark {
  double x = 0;
  QString label;  // "restart 1" and, on a second line, what failed
};

class EventMarks {
 public:
  explicit EventMarks(QCustomPlot* plot) : plot_(plot) {}
  // Shows exactly `marks`; false when nothing changed (no replot needed).
  bool show(const std::vector<ChartMark>& marks);
  // Puts each label on the side of its line where it fits inside the axis rect: right of the
  // line, else (a mark near the right edge) left of it. For the plot's afterLayout, when the
  // axis range and the pixel width are the ones about to be drawn.
  void align();
  int count() const { return int(shown_.size()); }

 private:
  QCustomPlot* plot_;
  std::vector<ChartMark> shown_;
  std::vector<QCPItemStraightLine*> lines_;
  std::vector<QCPItemText*> texts_;
};

}  // namespace ddpdesk

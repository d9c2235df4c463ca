// The Scalars area of the charts panel: a small chart for every scalar the training script logs
// (every gauge whose name is not a system gauge, system_gauges.h), side by side in a grid that
// scrolls. The names are found on a timer, never per message: a name that first arrives during a
// live run gets its chart within a tick, in the order the names arrived.
//
// Why a grid of charts rather than one chart with a name selector: the scalars are read against
// each other and against the loss (a loss spike next to the grad norm's, the learning rate's
// warm-up and decay beside both), which a selector would hide behind a click; and their scales
// differ by orders of magnitude (lr 1e-4, tokens/s 1e5), so one chart with a shared y axis
// would flatten all but one. Many names (tens) stay usable: the grid scrolls, at least 320 px a
// column and 160 px a row, and a chart scrolled out of sight is paused (not fed or redrawn until
// it comes back), so thirty names cost what the few on screen cost. Over the grid the mouse wheel
// scrolls when there is somewhere to scroll; Ctrl+wheel zooms the chart under it.
#pragma once

#include <QTimer>
#include <QWidget>
#include <string>
#include <string_view>
#include <vector>

#include "plot/chart_sources.h"
#include "plot/x_axis.h"

class QGridLayout;
class QScrollArea;

namespace ddpdesk {

class ScalarChart;

class ScalarsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ScalarsPanel(QWidget* parent = nullptr);

  void setSources(const ChartSources& sources);
  void setXAxis(XAxis axis);
  void setSmoothing(double weight);

  // Adds a chart for every name that arrived since the last call (and drops those of sources no
  // longer shown); pauses the charts out of sight. The timer calls it; tests call it directly.
  void sync();

  // The script's scalars that the sources hold, as the charts show them: every gauge name that is
  // not a system gauge, in the order the names first arrived (the first source's first).
  std::vector<std::string> scalarNames() const;
  int chartCount() const { return int(charts_.size()); }
  // In grid order; nullptr when there is no chart of that name.
  ScalarChart* chart(std::string_view gauge) const;
  const std::vector<ScalarChart*>& charts() const { return charts_; }
  // Columns of the grid at the present width.
  int columnCount() const { return columns_; }

 Q_SIGNALS:
  // The number of charts changed (0: the area has nothing to show).
  void chartsChanged(int count);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  int fittingColumns() const;
  // The grid laid out again if the width now fits another number of columns; the pauses updated.
  void fit();
  void reflow();
  void updatePaused();

  QScrollArea* scroll_;
  QWidget* host_;
  QGridLayout* grid_;
  std::vector<ScalarChart*> charts_;
  ChartSources sources_;
  XAxis xAxis_ = XAxis::Step;
  double smoothing_ = 0.6;
  int columns_ = 1;
  QTimer timer_;
};

}  // namespace ddpdesk

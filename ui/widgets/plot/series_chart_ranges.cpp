// SeriesChart's axis ranges: fitting the axes to what the curves hold (their keys, each value
// axis, log scales, accuracy kept in [0, 1], a constant value's own margin) and widening them for
// the markers drawn on the first and last points. The widget side is in series_chart.cpp.
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

#include "plot/series_chart.h"
#include "plot/series_chart_internal.h"

namespace ddpdesk {

void SeriesChart::applyRanges() {
  Extent left, right;
  bool markers = false;  // a visible curve draws a marker at each point
  bool leftMarkers = false, rightMarkers = false;
  bool rightFraction = true, anyRight = false;  // every right-axis curve is a fraction (0..1)
  for (const auto& c : curves_) {
    if (!c->graph->isVisible()) continue;
    (c->def.rightAxis ? right : left).unite(c->graph->extent());
    if (c->def.style.scatter) (c->def.rightAxis ? rightMarkers : leftMarkers) = markers = true;
    if (c->def.rightAxis) {
      anyRight = true;
      rightFraction = rightFraction && c->def.value == CurveDef::Value::EvalAccuracy;
    }
  }
  Extent keys = left;
  keys.unite(right);
  if (!keys.empty()) {
    const double pad = keys.keyMax > keys.keyMin ? 0.0 : 0.5;
    plot_->xAxis->setRange(keys.keyMin - pad, keys.keyMax + pad);
    if (markers) padForMarkers(plot_->xAxis);
  }
  auto fit = [this](QCPAxis* axis, const Extent& e, bool log, bool fraction, bool marked) {
    if (!(e.valueMin <= e.valueMax)) return;
    if (log) {
      if (!(e.positiveMin <= e.valueMax)) return;
      const double lo = e.positiveMin, hi = std::max(e.valueMax, lo);
      axis->setRange(lo / 1.15, hi * 1.15);
    } else {
      const double span = e.valueMax - e.valueMin;
      // A single value gets a margin of its own size's order, not a fixed half unit (which made
      // one accuracy of 0.85 an axis from 0.4 to 1.2, and a constant learning rate of 0.001 a
      // line on zero); only zero itself gets a fixed margin.
      const double pad = span > 0            ? span * 0.05
                         : e.valueMax != 0.0 ? std::fabs(e.valueMax) * 0.05
                         : fraction          ? 0.01
                                             : 0.5;
      double lo = e.valueMin - pad, hi = e.valueMax + pad;
      // Accuracy lives in [0, 1]: the axis never promises values outside it.
      if (fraction) lo = std::max(lo, 0.0), hi = std::min(hi, 1.0);
      axis->setRange(lo, hi);
    }
    if (marked) padForMarkers(axis);
  };
  fit(plot_->yAxis, left, logY_, false, leftMarkers);
  fit(plot_->yAxis2, right, false, anyRight && rightFraction, rightMarkers);
}

void SeriesChart::padForMarkers(QCPAxis* axis) {
  // A marker is drawn centred on its point: widen the range by its radius in pixels, so the
  // first and last points (a validation result at the run's last step) show whole.
  constexpr double kMarkerRadiusPx = 5.0;  // the 7 px markers of smoothed_graph.cpp, and a rim
  const QRect rect = axis->axisRect()->rect();
  const double length = axis->orientation() == Qt::Horizontal ? rect.width() : rect.height();
  if (length <= 4 * kMarkerRadiusPx) return;
  QCPRange r = axis->range();
  if (axis->scaleType() == QCPAxis::stLogarithmic) {
    if (r.lower <= 0) return;
    const double k = std::pow(r.upper / r.lower, kMarkerRadiusPx / (length - 2 * kMarkerRadiusPx));
    axis->setRange(r.lower / k, r.upper * k);
    return;
  }
  const double d = r.size() * kMarkerRadiusPx / (length - 2 * kMarkerRadiusPx);
  axis->setRange(r.lower - d, r.upper + d);
}

}  // namespace ddpdesk

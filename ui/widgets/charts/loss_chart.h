// The loss chart: with one run, a curve per rank plus the global loss (mean over every rank's
// samples of the window) and the validation points; with several runs overlaid, each run's
// global loss and validation points in its own colour. Imported series (a TensorBoard tag) add
// a curve each, x = step (or wall time since their first point; none on the samples axis).
#pragma once

#include "plot/series_chart.h"

namespace ddpdesk {

class LossChart : public SeriesChart {
  Q_OBJECT
 public:
  explicit LossChart(QWidget* parent = nullptr);

  static QString rankCurveName(int rank) { return QStringLiteral("rank %1").arg(rank); }
  static QString globalCurveName() { return QStringLiteral("global"); }
  static QString evalCurveName() { return QStringLiteral("validation"); }

  // Curves both charts draw for run `source`: one per rank of `value` (single run only) and the
  // global curve of `global_value`, named and coloured alike in the loss and throughput charts.
  static void appendRunCurves(std::vector<CurveDef>& out, const ChartSources& src, int source,
                              CurveDef::Value rank_value, CurveDef::Value global_value);

 protected:
  std::vector<CurveDef> layout() const override;
};

}  // namespace ddpdesk

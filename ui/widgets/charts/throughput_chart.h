// The throughput chart: each rank's samples/s (its share of the global rate it measured) and the
// global samples/s; validation accuracy on the right axis when the task is a classification.
#pragma once

#include "plot/series_chart.h"

namespace ddpdesk {

class ThroughputChart : public SeriesChart {
  Q_OBJECT
 public:
  explicit ThroughputChart(QWidget* parent = nullptr);

  static QString accuracyCurveName() { return QStringLiteral("val. accuracy"); }

 protected:
  std::vector<CurveDef> layout() const override;
};

}  // namespace ddpdesk

// The throughput chart: each rank's samples/s (its share of the global rate it measured) and the
// global samples/s; validation accuracy on the right axis when the task is a classification. A
// run whose ranks count no samples (a Python script charted from its output or its TensorBoard
// files) has no throughput curve but a note saying why.
#pragma once

#include "plot/series_chart.h"

class QLabel;

namespace ddpdesk {

class ThroughputChart : public SeriesChart {
  Q_OBJECT
 public:
  explicit ThroughputChart(QWidget* parent = nullptr);

  static QString accuracyCurveName() { return QStringLiteral("val. accuracy"); }
  // Shown while the runs shown count no samples.
  bool showsNote() const;
  QString noteText() const;

 protected:
  std::vector<CurveDef> layout() const override;

 private:
  QLabel* note_;
};

}  // namespace ddpdesk

// The difference of two runs' curves (curve_compare.h) as a chart of its own: one curve,
// other − reference, drawn by SeriesChart like the loss chart (its own MetricsStore holds the
// points as a one-rank run's global series, so zoom, log y, PNG export and LOD drawing come for
// free), with a zero line to read the sign against.
#pragma once

#include <memory>

#include "compare/curve_compare.h"
#include "plot/series_chart.h"

namespace ddpdesk {

class DifferenceChart : public SeriesChart {
  Q_OBJECT
 public:
  explicit DifferenceChart(QWidget* parent = nullptr);
  ~DifferenceChart() override;

  // Shows `delta` (a ddpdesk::Curve, not SeriesChart's own Curve; x on `axis`) under the legend
  // name `name`; an empty curve clears the chart.
  void setDifference(const ddpdesk::Curve& delta, CompareX axis, const QString& name);
  QString differenceName() const { return name_; }
  std::size_t pointCount() const;

  static XAxis chartAxis(CompareX axis);

 protected:
  std::vector<CurveDef> layout() const override;

 private:
  std::unique_ptr<MetricsStore> store_;
  QString name_;
};

}  // namespace ddpdesk

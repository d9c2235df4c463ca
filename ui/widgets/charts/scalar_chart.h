// A chart of one scalar a training script logs (ddpdesk.log(lr=..., grad_norm=...)): the gauge of
// that name, one curve per rank in the rank's colour (or, with runs overlaid, per run and rank in
// the run's colour), on the x axis and with the smoothing the other charts use. Fed and redrawn
// like them (SeriesChart: on a timer, never per point). The name is the script's, whatever it
// is: shown as plain text, cut to fit, control characters made visible.
#pragma once

#include <string>

#include "plot/series_chart.h"

namespace ddpdesk {

class ScalarChart : public SeriesChart {
  Q_OBJECT
 public:
  explicit ScalarChart(const std::string& gauge, QWidget* parent = nullptr);

  const std::string& gauge() const { return gauge_; }
  // A gauge's name as text for a title: UTF-8 decoded (invalid bytes as U+FFFD), control and
  // formatting characters (a line break, a right-to-left override) as U+FFFD.
  static QString displayName(const std::string& gauge);
  // Legend names: "rank 0"; with runs overlaid "<run> rank 0".
  static QString curveName(int rank);

 protected:
  std::vector<CurveDef> layout() const override;

 private:
  std::string gauge_;
};

}  // namespace ddpdesk

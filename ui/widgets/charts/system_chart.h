// The System chart: what each rank costs its machine, from its system gauges (system_gauges.h):
// CPU % (100 = one core) on the left axis and resident memory (MiB, dashed) on the right, one
// colour per rank; on CUDA ranks also the GPU's utilisation and memory. Fed and redrawn like the
// other charts (SeriesChart: on a timer, never per point), on the x axis they share. A run with
// no system gauges (sampling off, an older worker) shows a note instead.
#pragma once

#include "plot/series_chart.h"

class QLabel;

namespace ddpdesk {

class SystemChart : public SeriesChart {
  Q_OBJECT
 public:
  explicit SystemChart(QWidget* parent = nullptr);

  // Legend names: "rank 0 CPU %", "rank 0 RSS", "rank 0 GPU %", "rank 0 GPU mem".
  static QString curveName(int rank, const char* gauge);
  // Shown while no source has system gauges.
  bool showsNote() const;
  QString noteText() const;  // "No run", "No system metrics yet" or "... in this run"

 protected:
  std::vector<CurveDef> layout() const override;

 private:
  QLabel* note_;
};

}  // namespace ddpdesk

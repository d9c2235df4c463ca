// The charts area: the loss chart over the throughput chart and, beside the throughput, the Time
// chart (each rank's step breakdown) and the System chart (each rank's CPU, memory and GPU);
// under them, while the shown runs have any, the Scalars area (a chart per scalar the training
// script logs: ScalarsPanel). With the controls they share (x axis, smoothing slider, CSV export)
// and a line saying what is shown: the live run, or runs opened from the history (with a way
// back to the live run).
#pragma once

#include <QStringList>
#include <QWidget>

#include "plot/chart_sources.h"
#include "plot/x_axis.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QSplitter;

namespace ddpdesk {

class LossChart;
class ScalarsPanel;
class ThroughputChart;
class SystemChart;
class TimeChart;

class ChartsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ChartsPanel(QWidget* parent = nullptr);

  // `live`: the sources are the running (or last) run, not runs opened from the history.
  void setSources(const ChartSources& sources, bool live);
  const ChartSources& sources() const;
  bool showingLive() const { return live_; }
  // Runs being read from the history (PastRunLoader): named in the line above the charts until
  // setSources() or an empty list.
  void setOpening(const QStringList& labels);

  void setXAxis(XAxis axis);
  XAxis xAxis() const;
  // The slider's position as a smoothing weight (0 .. 0.99).
  void setSmoothing(double weight);
  double smoothing() const;

  LossChart* lossChart() const { return loss_; }
  ThroughputChart* throughputChart() const { return throughput_; }
  TimeChart* timeChart() const { return time_; }
  SystemChart* systemChart() const { return system_; }
  ScalarsPanel* scalarsPanel() const { return scalars_; }
  QSlider* smoothingSlider() const { return slider_; }

 public Q_SLOTS:
  void exportPngDialog();
  void exportCsvDialog();

 Q_SIGNALS:
  void backToLiveRequested();
  void message(const QString& text);

 private:
  void updateShowing();
  void showScalars(int charts);

  LossChart* loss_;
  ThroughputChart* throughput_;
  TimeChart* time_;
  SystemChart* system_;
  ScalarsPanel* scalars_;
  QSplitter* split_;
  QComboBox* xAxis_;
  QSlider* slider_;
  QLabel* sliderValue_;
  QLabel* showing_;
  QPushButton* backToLive_;
  QPushButton* csv_;
  bool live_ = true;
  int scalarsHeight_ = 0;  // the Scalars area's height when it was last hidden
  QStringList opening_;
};

}  // namespace ddpdesk

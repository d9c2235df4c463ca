// The Time chart: where each rank's optimizer steps go, one horizontal bar per rank stacked from
// its step breakdown (data, forward, backward, comm, optimizer, other, telemetry, in ms per step;
// "other" only for training scripts; the legend lists the parts the run measures), with
// the step time and sync efficiency at the bar's end (right axis), where a straggler is named.
// Shows the latest log interval or the run's average. Follows one run of its sources (the first
// with a breakdown, when runs are overlaid); redraws on a timer when that run's store changed,
// never per message. A run whose workers sent no breakdown shows a note instead of bars.
#pragma once

#include <QString>
#include <QTimer>
#include <QWidget>
#include <array>

#include "metrics/step_breakdown.h"
#include "metrics/straggler_watch.h"
#include "plot/chart_sources.h"

class QComboBox;
class QCPBars;
class QCustomPlot;
class QLabel;

namespace ddpdesk {

class TimeChart : public QWidget {
  Q_OBJECT
 public:
  enum class Mode { Latest, Average };

  explicit TimeChart(QWidget* parent = nullptr);

  void setSources(const ChartSources& sources);
  void setMode(Mode mode);
  Mode mode() const { return mode_; }
  // Redraw period (default 200 ms: bars need no more), first tick after `phaseMs`.
  void setRedrawInterval(int ms, int phaseMs = 0);

  // Redraws when the store, the mode or the sources changed. The timer calls it; tests too.
  void sync();

  QCustomPlot* plot() const { return plot_; }
  QCPBars* bars(StepPart part) const { return bars_[int(part)]; }
  // Ranks with a bar, top to bottom, and the text at the end of a rank's bar.
  const std::vector<int>& shownRanks() const { return shown_; }
  QString barLabel(int rank) const;
  // The note shown instead of bars ("no step breakdown…"); empty while bars are shown.
  QString note() const;
  const StragglerWatch& stragglers() const { return watch_; }

 private:
  void pickStore();
  void redraw();
  void placeNote();
  void setLegendParts(bool other, bool comm, bool telemetry);
  bool eventFilter(QObject* watched, QEvent* event) override;

  QCustomPlot* plot_;
  QComboBox* mode_box_;
  QLabel* note_;
  std::array<QCPBars*, kStepPartCount> bars_{};
  QTimer timer_;
  ChartSources sources_;
  const MetricsStore* store_ = nullptr;
  StragglerWatch watch_;
  Mode mode_ = Mode::Latest;
  quint64 drawnRevision_ = 0;
  bool dirty_ = true;
  std::vector<int> shown_;
  std::vector<QString> labels_;                        // per shown rank
  std::array<bool, 3> legendParts_{true, true, true};  // "other", "comm", "telemetry" listed
};

}  // namespace ddpdesk

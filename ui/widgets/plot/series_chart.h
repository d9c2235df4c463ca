// SeriesChart: a QCustomPlot that follows one or more MetricsStores. Subclasses say which curves
// exist (layout()); this class feeds them incrementally, on a timer, only when a store's revision
// moved: a redraw never happens per point, and every point is kept (each curve's LodSeries draws
// millions of them). Building every curve at once (new sources, another x axis) runs on a worker
// thread when there are many points, with "Loading…" over the chart meanwhile. Also: legend click
// toggles a series, linear/log y, x by step, samples or wall time, wheel zoom, drag pan,
// double-click or Reset to follow the data again, PNG export, and a pause for a chart that is
// out of sight (it catches up when it comes back). A run's restarts (an event "restart" in its
// record) are dashed vertical lines with a label (event_marks.h).
#pragma once

#include <QColor>
#include <QElapsedTimer>
#include <QHash>
#include <QSet>
#include <QString>
#include <QTimer>
#include <QWidget>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "plot/chart_sources.h"
#include "plot/curve_builder.h"
#include "plot/smoothed_graph.h"
#include "plot/x_axis.h"

class QCustomPlot;
class QCPAxis;
class QCPGraph;
class QCheckBox;
class QHBoxLayout;
class QLabel;

namespace ddpdesk {

class ElidedLabel;
class EventMarks;
class MetricsStore;

// One curve: where its points come from and how it looks.
struct CurveDef {
  // Gauge: one rank's gauge named `gauge` (MetricsStore::gauges()), whatever the name.
  enum class Kind { Rank, Global, Eval, Gauge };
  enum class Value { Loss, SamplesPerSec, RankSamplesPerSec, EvalLoss, EvalAccuracy };
  QString id;    // unique and stable: curves are matched by id across layout() calls
  QString name;  // legend text
  int source = 0;
  Kind kind = Kind::Global;
  int rank = -1;
  Value value = Value::Loss;
  std::string gauge;   // Kind::Gauge: the gauge's name
  double scale = 1.0;  // Kind::Gauge: values are multiplied by this (bytes to MiB, say)
  CurveStyle style;
  bool rightAxis = false;
};

class SeriesChart : public QWidget {
  Q_OBJECT
 public:
  explicit SeriesChart(const QString& title, const QString& yLabel, QWidget* parent = nullptr);
  ~SeriesChart() override;

  void setSources(const ChartSources& sources);
  const ChartSources& sources() const { return sources_; }

  void setXAxis(XAxis axis);
  XAxis xAxis() const { return xAxis_; }
  void setSmoothing(double weight);  // TensorBoard's smoothing weight, 0 .. 0.999
  double smoothing() const { return smoothing_; }
  void setLogY(bool log);
  bool logY() const { return logY_; }
  // Redraw period (default 66 ms: 15 Hz), first tick after `phaseMs`: charts side by side take
  // turns instead of redrawing in the same event-loop pass.
  void setRedrawInterval(int ms, int phaseMs = 0);
  // Paused, the timer does not feed or redraw the chart, nor do the setters below (x axis,
  // smoothing, sources...): what they ask for waits. Unpausing catches up at once. A chart
  // scrolled out of sight is paused by its holder; sync() called directly still runs.
  void setPaused(bool paused);
  bool isPaused() const { return paused_; }
  // The title, as given (plain text, never read as HTML; cut in the middle when the row is narrow).
  QString title() const;

  // Feeds whatever the stores gained since the last call; replots when anything changed.
  // The timer calls it; tests and the benchmark call it directly.
  void sync();
  // A rebuild of every curve is running on a worker thread, or a source is still reading its
  // file (MetricsStore::isLoading()).
  bool isLoading() const;
  // Rebuilds of more points than this (all curves together) run on a worker thread; smaller ones
  // right away, which spares a live chart a flash of "Loading…". 0: always on a worker.
  void setAsyncThreshold(std::size_t points) { asyncThreshold_ = points; }
  // Back to following the data (undo zoom and pan).
  void resetView();
  bool following() const { return following_; }
  // width/height 0: the chart's size on screen.
  bool savePng(const QString& path, int width = 0, int height = 0);

  QCustomPlot* plot() const { return plot_; }
  // How many of a source's global steps are mapped to x keys (to place its evaluation points):
  // none for a chart that draws no evaluation curve of it, whose GUI thread must not pay for them.
  std::size_t mappedGlobalKeys(int source) const;
  QStringList curveNames() const;
  const SmoothedGraph* curve(const QString& name) const;
  void setCurveVisible(const QString& name, bool visible);
  bool isCurveVisible(const QString& name) const;
  // Colours for rank r and for overlaid run i (a 10-colour qualitative palette).
  static QColor paletteColor(int i);

 Q_SIGNALS:
  void logYChanged(bool log);
  void loadingChanged(bool loading);

 protected:
  // The curves this chart shows for the current sources. Called on every sync that sees a
  // change and on every rebuild (another x axis); new ids get new curves (in layout order), and
  // a curve whose id is no longer listed is dropped.
  virtual std::vector<CurveDef> layout() const = 0;
  // Extra controls in the chart's title row.
  QHBoxLayout* toolRow() const { return toolRow_; }
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  struct Curve;
  struct SourceState;

  // A curve's x and y columns in the current x mode (y null: nothing to draw).
  struct Columns {
    const ColumnView* x = nullptr;
    const ColumnView* y = nullptr;
    std::size_t size = 0;
    double scale = 1.0;
  };
  Columns columns(const MetricsStore& store, const CurveDef& def) const;

  void rebuild();
  RebuildJob::Curve curveJob(const Curve& c) const;
  void adopt(RebuildResult&& result, const std::vector<quint64>& revisions);
  void cancelRebuild();
  void updateLoading();
  void addNewCurves();
  void applyVisibility(Curve& c, bool visible);
  void feed(Curve& c);
  // The global series' keys on the x axis, which place evaluation points: only for a source
  // the chart draws evaluation curves of (mapping a million steps costs the GUI thread ~20 ms).
  bool drawsEvals(int source) const;
  void updateGlobalKeys(int source);
  void applyRanges();
  // A source's restart events read since the last call; the marks placed on the current x axis.
  void collectMarks(int source);
  void placeMarks();
  void padForMarkers(QCPAxis* axis);
  void onLegendClick(QCPAbstractPlottable* plottable);
  void markInteraction();
  // What the setters call instead of sync(): nothing while paused.
  void syncUnlessPaused();

  QCustomPlot* plot_;
  ElidedLabel* title_;
  QCheckBox* logBox_;
  QHBoxLayout* toolRow_;
  QLabel* loadingLabel_;
  QTimer timer_;
  ChartSources sources_;
  std::vector<SourceState> state_;
  std::vector<std::unique_ptr<Curve>> curves_;
  std::unique_ptr<EventMarks> marks_;
  XAxis xAxis_ = XAxis::Step;
  double smoothing_ = 0.6;
  bool logY_ = false;
  QSet<QString> hidden_;  // curve names the user switched off (kept across rebuilds)
  bool following_ = true;
  bool needsRebuild_ = false;
  bool needsReplot_ = false;
  bool paused_ = false;
  // A rebuild on a worker thread: its generation (results of older ones are dropped) and the flag
  // that stops it early.
  bool rebuilding_ = false;
  quint64 generation_ = 0;
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  std::size_t asyncThreshold_ = 200000;
};

}  // namespace ddpdesk

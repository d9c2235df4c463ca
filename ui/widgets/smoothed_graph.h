// One series on a QCustomPlot: the raw points, and (for smoothable series) TensorBoard's
// debiased EMA of them drawn on top, with the raw curve kept faint behind. The legend shows one
// entry per series; hiding the series hides both graphs. Every point is kept here (LodSeries);
// the QCPGraphs get, before each replot, what the visible range can show (refresh()). Keeps its
// own key/value extents as points arrive, so auto-ranging never scans millions of points.
#pragma once

#include <QColor>
#include <QString>
#include <QVector>
#include <limits>

#include "lod_series.h"
#include "smoothing.h"

class QCustomPlot;
class QCPAxis;
class QCPGraph;
class QCPGraphData;
class QCPAbstractPlottable;

namespace ddpdesk {

struct CurveStyle {
  QColor color;
  double width = 1.0;
  bool smoothable = true;  // false: drawn as is (eval points, for instance)
  bool line = true;        // connect the points
  bool scatter = false;    // draw a marker at each point
};

// What a series covers, for auto-ranging.
struct Extent {
  double keyMin = std::numeric_limits<double>::infinity();
  double keyMax = -std::numeric_limits<double>::infinity();
  double valueMin = std::numeric_limits<double>::infinity();
  double valueMax = -std::numeric_limits<double>::infinity();
  double positiveMin = std::numeric_limits<double>::infinity();  // for a log axis
  bool empty() const { return !(keyMin <= keyMax); }
  void add(double key, double value);
  void unite(const Extent& other);
};

class SmoothedGraph {
 public:
  SmoothedGraph(QCustomPlot* plot, QCPAxis* keyAxis, QCPAxis* valueAxis, const QString& name,
                const CurveStyle& style, double smoothing);
  ~SmoothedGraph();
  SmoothedGraph(const SmoothedGraph&) = delete;
  SmoothedGraph& operator=(const SmoothedGraph&) = delete;

  // Appends points (in arrival order; keys normally ascending).
  void append(const QVector<QCPGraphData>& points);
  // Hands the graphs what [lo, hi] at `pixels` wide can show; cheap when nothing changed.
  void refresh(double lo, double hi, int pixels);
  void clear();
  // Recomputes the smoothed graph from the raw points (O(n)); 0 switches smoothing off.
  void setSmoothing(double weight);
  void setVisible(bool visible);
  bool isVisible() const { return visible_; }

  QString name() const { return name_; }
  const Extent& extent() const { return extent_; }
  int size() const { return int(raw_series_.size()); }
  // Every point: keys, raw values, smoothed values (empty while smoothing is off).
  const LodSeries& rawSeries() const { return raw_series_; }
  const LodSeries& smoothedSeries() const { return smooth_series_; }
  QCPGraph* raw() const { return raw_; }
  QCPGraph* smoothed() const { return smooth_; }  // nullptr when not smoothable
  // The graph whose legend item stands for the series.
  QCPAbstractPlottable* legendPlottable() const;

 private:
  void applyPens();

  QCustomPlot* plot_;
  QString name_;
  CurveStyle style_;
  QCPGraph* raw_ = nullptr;
  QCPGraph* smooth_ = nullptr;
  EmaSmoother ema_;
  double weight_ = 0;
  bool visible_ = true;
  Extent extent_;
  LodSeries raw_series_;
  LodSeries smooth_series_;
  // What the graphs hold now, to skip refreshes that would change nothing.
  struct Shown {
    double lo = 0, hi = -1;
    int pixels = 0;
    std::size_t size = 0;
    bool smoothed = false;
  } shown_;
};

}  // namespace ddpdesk

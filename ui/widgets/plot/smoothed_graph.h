// One series on a QCustomPlot: the raw points, and (for smoothable series) TensorBoard's
// debiased EMA of them drawn on top, with the raw curve kept faint behind. The legend shows one
// entry per series; hiding the series hides both graphs. Every point is kept here (CurveData);
// the QCPGraphs get, before each replot, what the visible range can show (refresh()).
#pragma once

#include <QColor>
#include <QString>
#include <QVector>

#include "plot/curve_data.h"

class QCustomPlot;
class QCPAxis;
class QCPGraph;
class QCPGraphData;
class QCPAbstractPlottable;

namespace ddpdesk {

struct CurveStyle {
  QColor color;
  double width = 1.0;
  bool smoothable = true;            // false: drawn as is (eval points, for instance)
  bool line = true;                  // connect the points
  bool scatter = false;              // draw a marker at each point
  Qt::PenStyle pen = Qt::SolidLine;  // dashed: a second quantity in a rank's colour
};

class SmoothedGraph {
 public:
  SmoothedGraph(QCustomPlot* plot, QCPAxis* keyAxis, QCPAxis* valueAxis, const QString& name,
                const CurveStyle& style, double smoothing);
  ~SmoothedGraph();
  SmoothedGraph(const SmoothedGraph&) = delete;
  SmoothedGraph& operator=(const SmoothedGraph&) = delete;

  // Appends points (in arrival order; keys normally ascending).
  void append(const double* keys, const double* values, std::size_t n);
  // Appends a step series' points [size(), to), sharing its columns where it can
  // (CurveData::extend).
  void extend(const ColumnView& x, const ColumnView& y, double scale, std::size_t to,
              KeyMapper& mapper);
  // Takes every point at once (built elsewhere, a worker thread for instance); recomputes the
  // smoothed series if `data` was built with another smoothing weight than the current one.
  void adopt(CurveData&& data);
  // Hands the graphs what [lo, hi] at `pixels` wide can show; cheap when nothing changed.
  void refresh(double lo, double hi, int pixels);
  void clear();
  // clear(), handing over the points instead of freeing them (freeing a million-point curve is
  // milliseconds of returning memory to the system: a chart lets a worker thread do it).
  CurveData take();
  // Recomputes the smoothed graph from the raw points (O(n)); 0 switches smoothing off.
  // `recompute` false: only the weight and the pens change, for a caller that rebuilds the
  // points itself (on a worker thread) and hands them over with adopt().
  void setSmoothing(double weight, bool recompute = true);
  void setVisible(bool visible);
  bool isVisible() const { return visible_; }

  QString name() const { return name_; }
  const Extent& extent() const { return data_.extent(); }
  int size() const { return int(data_.size()); }
  // Every point: keys, raw values, smoothed values (empty while smoothing is off).
  const LodSeries& rawSeries() const { return data_.raw(); }
  const LodSeries& smoothedSeries() const { return data_.smoothed(); }
  const CurveData& data() const { return data_; }
  // The smoothing weight this series uses (0 when it is not smoothable).
  double weight() const { return weight_; }
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
  double weight_ = 0;
  bool visible_ = true;
  CurveData data_;
  // What the graphs hold now, to skip refreshes that would change nothing.
  struct Shown {
    double lo = 0, hi = -1;
    int pixels = 0;
    std::size_t size = 0;
    bool smoothed = false;
  } shown_;
};

}  // namespace ddpdesk

// CurveData: every point of one chart curve, with nothing drawn: the raw points and TensorBoard's
// debiased EMA of them (a LodSeries each) and the extent for auto-ranging, kept as points arrive
// so auto-ranging never scans millions of points. Plain data without QCustomPlot objects, so a
// worker thread can build one from millions of points while the chart stays responsive; a
// SmoothedGraph owns one and draws it. A curve of a store's step series shares the store's
// columns where it shows them as they are (curve_column.h); the smoothed series shares the raw
// series' keys.
#pragma once

#include <cstddef>
#include <limits>

#include "plot/lod_series.h"
#include "plot/smoothing.h"
#include "plot/x_axis.h"

namespace ddpdesk {

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

class CurveData {
 public:
  // `weight`: the smoothing weight; 0 keeps no smoothed series (smoothing off, or a curve that
  // is never smoothed).
  explicit CurveData(double weight = 0) { setSmoothing(weight); }

  // Appends points in arrival order (keys normally ascending), copied.
  void append(const double* keys, const double* values, std::size_t n);
  // Appends the points [size(), to) of a step series: keys are `x` mapped through `mapper`,
  // values `y` times `scale`. The columns are shared, not copied, while the keys are x as it is
  // (steps, samples; wall time until a resume shifts it) and the scale stays the same.
  void extend(const ColumnView& x, const ColumnView& y, double scale, std::size_t to,
              KeyMapper& mapper);
  // Recomputes the smoothed series from the raw points (O(n)).
  void setSmoothing(double weight);
  double smoothing() const { return weight_; }
  void clear();

  std::size_t size() const { return raw_.size(); }
  const LodSeries& raw() const { return raw_; }
  const LodSeries& smoothed() const { return smooth_; }  // empty while smoothing is off
  const Extent& extent() const { return extent_; }
  // Bytes this curve holds of its own: its pyramids and the keys and values it does not share.
  std::size_t ownBytes() const;

 private:
  void grown(std::size_t from);  // extent and smoothed series for the raw points from `from` on

  LodSeries raw_;
  LodSeries smooth_;
  EmaSmoother ema_;
  double weight_ = 0;
  Extent extent_;
};

}  // namespace ddpdesk

// CurveData: every point of one chart curve, with nothing drawn: the raw points and TensorBoard's
// debiased EMA of them (a LodSeries each) and the extent for auto-ranging, kept as points arrive
// so auto-ranging never scans millions of points. Plain data without QCustomPlot objects, so a
// worker thread can build one from millions of points while the chart stays responsive; a
// SmoothedGraph owns one and draws it.
#pragma once

#include <cstddef>
#include <limits>

#include "lod_series.h"
#include "smoothing.h"

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

  // Appends points in arrival order (keys normally ascending).
  void append(const double* keys, const double* values, std::size_t n);
  // Recomputes the smoothed series from the raw points (O(n)).
  void setSmoothing(double weight);
  double smoothing() const { return weight_; }
  void clear();

  std::size_t size() const { return raw_.size(); }
  const LodSeries& raw() const { return raw_; }
  const LodSeries& smoothed() const { return smooth_; }  // empty while smoothing is off
  const Extent& extent() const { return extent_; }

 private:
  LodSeries raw_;
  LodSeries smooth_;
  EmaSmoother ema_;
  double weight_ = 0;
  Extent extent_;
};

}  // namespace ddpdesk

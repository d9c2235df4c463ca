// LodSeries: every point of one curve, plus a min/max pyramid so a redraw costs what the screen
// can show, not what the run produced. QCustomPlot's adaptive sampling alone still visits every
// point in view on each replot (about 6 ns a point: 17 graphs of 1,000,000 points take ~100 ms);
// with this, a graph gets at most 32 points per pixel column: the raw points when that many fit
// (and QCustomPlot's adaptive sampling thins them), else, from the coarsest level with at least
// two buckets per column, the lowest and highest point of each pixel column as one vertical
// stroke: the same vertical extent per column as adaptive sampling draws, stroked once instead
// of twice (noise spanning many pixels, on a log axis above all, made those strokes the cost of
// a redraw). Zooming in far enough always shows the raw points themselves.
#pragma once

#include <QVector>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "metrics/chunked_array.h"
#include "plot/curve_column.h"

class QCPGraphData;

namespace ddpdesk {

class LodSeries {
 public:
  static constexpr std::size_t kBaseBucket = 16;  // points per bucket at level 0
  static constexpr std::size_t kFanOut = 4;       // each level's buckets hold 4 of the previous
  static constexpr int kRawPerPixel = 32;         // raw points per pixel column still drawn as is

  void append(double key, double value);
  void append(const double* keys, const double* values, std::size_t n);
  // Appends n points whose keys and values come from columns (shared, not copied, where they
  // can be: curve_column.h) or arrays.
  void append(const CurveColumn::Input& keys, const CurveColumn::Input& values, std::size_t n);
  void clear();
  std::size_t size() const { return keys_.size(); }
  double key(std::size_t i) const { return keys_[i]; }
  double value(std::size_t i) const { return values_[i]; }
  const CurveColumn& keys() const { return keys_; }
  const CurveColumn& values() const { return values_; }
  // Bytes of the min/max pyramid (what the series holds besides its keys and values).
  std::size_t pyramidBytes() const;
  // Keys arrived in ascending order (a resume from an older checkpoint can break that; then
  // points() falls back to every point and QCustomPlot sorts them).
  bool sorted() const { return sorted_; }

  // What to hand QCustomPlot for keys in [lo, hi] drawn `pixels` wide: the raw points (with one
  // neighbour outside on each side, so lines enter and leave the view) or a min/max envelope of
  // at most two points per pixel column (then draw it without adaptive sampling).
  void points(double lo, double hi, int pixels, QVector<QCPGraphData>* out) const;
  // The level points() used last time (-1: raw), for tests and the benchmark.
  int lastLevel() const { return lastLevel_; }

 private:
  // The indices of a bucket's lowest and highest finite point (kNone: it has none). Indices
  // rather than the points themselves: 8 bytes a bucket instead of 32, the points being at hand
  // in the keys and values. A curve of 4 billion points would take 64 GB before its pyramid did.
  struct Bucket {
    static constexpr std::uint32_t kNone = ~std::uint32_t(0);
    std::uint32_t low, high;
    bool empty() const { return low == kNone; }
  };
  static_assert(Column::kChunk % kBaseBucket == 0, "a level-0 bucket lies within one chunk");
  void index(std::size_t from);  // sortedness and pyramid for the points from `from` on
  std::size_t bucketSize(std::size_t level) const;
  void envelope(const Chunked<Bucket>& buckets, std::size_t b0, std::size_t b1, double lo,
                double hi, int pixels, QVector<QCPGraphData>* out) const;

  // First index whose key is >= key (lower) or > key (upper); keys are sorted.
  std::size_t lowerBound(double key) const;
  std::size_t upperBound(double key) const;

  CurveColumn keys_;
  CurveColumn values_;
  std::vector<Chunked<Bucket>> levels_;
  bool sorted_ = true;
  mutable int lastLevel_ = -1;
};

}  // namespace ddpdesk

#include "plot/lod_series.h"

#include <qcustomplot.h>
#include <algorithm>
#include <cmath>
#include <limits>

namespace ddpdesk {

std::size_t LodSeries::bucketSize(std::size_t level) const {
  std::size_t s = kBaseBucket;
  for (std::size_t l = 0; l < level; ++l) s *= kFanOut;
  return s;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

void LodSeries::append(double key, double value) {
  append(&key, &value, 1);
}

void LodSeries::append(const double* keys, const double* values, std::size_t n) {
  append(CurveColumn::copy(keys), CurveColumn::copy(values), n);
}

void LodSeries::append(const CurveColumn::Input& keys, const CurveColumn::Input& values,
                       std::size_t n) {
  if (n == 0) return;
  const std::size_t old = keys_.size();
  keys_.append(keys, n);
  values_.append(values, n);
  index(old);
}

void LodSeries::index(std::size_t old) {
  const std::size_t total = keys_.size();
  if (old > 0 && keys_[old] < keys_[old - 1]) sorted_ = false;
  for (std::size_t i = old + 1; i < total && sorted_; ++i) sorted_ = keys_[i - 1] <= keys_[i];

  // Level 0 from the points; each higher level from the four buckets below it, so a batch
  // costs O(batch) plus O(levels) for the buckets that were partly filled before it. The first
  // finite lowest and highest value of a bucket are its points (ties: the earliest).
  const ColumnView& values = values_.entries();
  const double scale = values_.scale();
  for (std::size_t l = 0, size = kBaseBucket; total >= 2 * size; ++l, size *= kFanOut) {
    if (l >= levels_.size()) levels_.emplace_back();
    Chunked<Bucket>& level = levels_[l];
    const std::size_t first = level.empty() ? 0 : level.size() - 1;  // the partial one is redone
    level.resize((total + size - 1) / size, Bucket{Bucket::kNone, Bucket::kNone});
    for (std::size_t b = first; b < level.size(); ++b) {
      Bucket k{Bucket::kNone, Bucket::kNone};
      double low = kInf, high = -kInf;
      if (l == 0) {
        // A level-0 bucket lies within one chunk: its values are contiguous.
        const std::size_t begin = b * size, end = std::min(total, begin + size);
        const double* v = &values[begin];
        for (std::size_t i = begin; i < end; ++i) {
          const double x = v[i - begin] * scale;
          if (!std::isfinite(x)) continue;
          if (x < low) k.low = std::uint32_t(i), low = x;
          if (x > high) k.high = std::uint32_t(i), high = x;
        }
      } else {
        const Chunked<Bucket>& below = levels_[l - 1];
        const std::size_t end = std::min(below.size(), (b + 1) * kFanOut);
        for (std::size_t c = b * kFanOut; c < end; ++c) {
          const Bucket& d = below[c];
          if (d.empty()) continue;
          const double dLow = values_[d.low], dHigh = values_[d.high];
          if (dLow < low) k.low = d.low, low = dLow;
          if (dHigh > high) k.high = d.high, high = dHigh;
        }
      }
      level[b] = k;
    }
  }
}

std::size_t LodSeries::pyramidBytes() const {
  std::size_t n = 0;
  for (const Chunked<Bucket>& level : levels_) n += level.size() * sizeof(Bucket);
  return n;
}

std::size_t LodSeries::lowerBound(double key) const {
  std::size_t lo = 0, hi = keys_.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (keys_[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

std::size_t LodSeries::upperBound(double key) const {
  std::size_t lo = 0, hi = keys_.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (!(key < keys_[mid]))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void LodSeries::clear() {
  keys_.clear();
  values_.clear();
  levels_.clear();
  sorted_ = true;
}

void LodSeries::points(double lo, double hi, int pixels, QVector<QCPGraphData>* out) const {
  out->clear();
  lastLevel_ = -1;
  const std::size_t n = keys_.size();
  if (n == 0) return;
  if (!sorted_) {
    out->reserve(int(n));
    for (std::size_t i = 0; i < n; ++i) out->append(QCPGraphData(keys_[i], values_[i]));
    return;
  }
  std::size_t i0 = lowerBound(lo);
  std::size_t i1 = upperBound(hi);
  i0 = i0 > 0 ? i0 - 1 : 0;  // one neighbour on each side
  i1 = std::min(n, i1 + 1);
  if (i1 <= i0) return;
  const std::size_t count = i1 - i0;
  const std::size_t columns = std::size_t(std::max(pixels, 1));
  if (count <= columns * kRawPerPixel) {
    out->reserve(int(count));
    for (std::size_t i = i0; i < i1; ++i) out->append(QCPGraphData(keys_[i], values_[i]));
    return;
  }
  // The coarsest level that still has two buckets or more per pixel column: a bucket then spans
  // at most half a column, so each column's extent is drawn where it belongs.
  std::size_t level = 0;
  while (level + 1 < levels_.size() && count / bucketSize(level + 1) >= 2 * columns) ++level;
  if (level >= levels_.size()) {  // too few points for any level (cannot happen past the check)
    for (std::size_t i = i0; i < i1; ++i) out->append(QCPGraphData(keys_[i], values_[i]));
    return;
  }
  lastLevel_ = int(level);
  const std::size_t size = bucketSize(level);
  const Chunked<Bucket>& buckets = levels_[level];
  const std::size_t b1 = std::min(buckets.size(), (i1 - 1) / size + 1);
  envelope(buckets, i0 / size, b1, lo, hi, pixels, out);
}

// The buckets' lowest and highest points merged per pixel column (2 to 8 buckets fall in one),
// two points per column. A polyline through every bucket's min and max crosses the column's
// whole extent once per bucket, and QCustomPlot's own sampling still strokes it twice (min to
// max, then back down to the next column's min); with noise spanning hundreds of pixels, as on a
// log axis, those strokes were most of a redraw. Here each column is stroked once, as a vertical
// line at the column's centre (its points' keys would straddle two pixel columns once rounded,
// leaving each half covered), from the end nearest to where the previous column ended.
void LodSeries::envelope(const Chunked<Bucket>& buckets, std::size_t b0, std::size_t b1, double lo,
                         double hi, int pixels, QVector<QCPGraphData>* out) const {
  const double scale = hi > lo ? double(pixels) / (hi - lo) : 0.0;
  out->reserve(int(2 * std::min<std::size_t>(b1 - b0, std::size_t(pixels) + 2)));
  bool open = false;
  double column = 0, low = 0, high = 0;
  double previous = std::numeric_limits<double>::quiet_NaN();
  auto close = [&] {
    if (!open) return;
    const bool highFirst = std::fabs(previous - high) < std::fabs(previous - low);
    const double first = highFirst ? high : low, last = highFirst ? low : high;
    const double key = scale > 0 ? lo + (column + 0.5) / scale : lo;
    out->append(QCPGraphData(key, first));
    if (last != first) out->append(QCPGraphData(key, last));
    previous = last;
  };
  auto add = [&](double key, double value) {
    const double c = std::floor((key - lo) * scale);
    if (!open || c != column) {
      close();
      open = true;
      column = c;
      low = high = value;
    } else {
      low = std::min(low, value);
      high = std::max(high, value);
    }
  };
  for (std::size_t b = b0; b < b1; ++b) {
    const Bucket& k = buckets[b];
    if (k.empty()) continue;
    const double keyLow = keys_[k.low], keyHigh = keys_[k.high];
    const double valueLow = values_[k.low], valueHigh = values_[k.high];
    const bool lowFirst = keyLow <= keyHigh;
    add(lowFirst ? keyLow : keyHigh, lowFirst ? valueLow : valueHigh);
    add(lowFirst ? keyHigh : keyLow, lowFirst ? valueHigh : valueLow);
  }
  close();
}

}  // namespace ddpdesk

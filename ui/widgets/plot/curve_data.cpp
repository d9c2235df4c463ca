#include "plot/curve_data.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ddpdesk {

void Extent::add(double key, double value) {
  if (!std::isfinite(key)) return;
  keyMin = std::min(keyMin, key);
  keyMax = std::max(keyMax, key);
  if (!std::isfinite(value)) return;
  valueMin = std::min(valueMin, value);
  valueMax = std::max(valueMax, value);
  if (value > 0) positiveMin = std::min(positiveMin, value);
}

void Extent::unite(const Extent& o) {
  keyMin = std::min(keyMin, o.keyMin);
  keyMax = std::max(keyMax, o.keyMax);
  valueMin = std::min(valueMin, o.valueMin);
  valueMax = std::max(valueMax, o.valueMax);
  positiveMin = std::min(positiveMin, o.positiveMin);
}

void CurveData::append(const double* keys, const double* values, std::size_t n) {
  const std::size_t from = raw_.size();
  raw_.append(keys, values, n);
  grown(from);
}

void CurveData::extend(const ColumnView& x, const ColumnView& y, double scale, std::size_t to,
                       KeyMapper& mapper) {
  const std::size_t from = raw_.size();
  if (to <= from) return;
  const std::size_t n = to - from;
  CurveColumn::Input keys = CurveColumn::share(x);
  std::vector<double> mapped;
  if (mapper.axis() == XAxis::WallTime) {  // steps and samples map to themselves
    mapped.resize(n);
    bool same = true;
    for (std::size_t i = from; i < to; ++i) {
      mapped[i - from] = mapper.map(x[i]);
      same = same && !mapper.shifted();
    }
    if (!same) keys = CurveColumn::copy(mapped.data());
  }
  raw_.append(keys, CurveColumn::share(y, scale), n);
  grown(from);
}

void CurveData::grown(std::size_t from) {
  const std::size_t to = raw_.size();
  for (std::size_t i = from; i < to; ++i) extent_.add(raw_.key(i), raw_.value(i));
  if (weight_ <= 0 || to <= from) return;
  std::vector<double> smoothed(to - from);
  for (std::size_t i = from; i < to; ++i) smoothed[i - from] = ema_.next(raw_.value(i));
  const CurveColumn& keys = raw_.keys();
  smooth_.append(CurveColumn::share(keys.entries(), keys.scale(), true),
                 CurveColumn::copy(smoothed.data()), smoothed.size());
}

void CurveData::setSmoothing(double weight) {
  weight_ = std::clamp(weight, 0.0, 0.999);
  ema_.setWeight(weight_);
  ema_.reset();
  smooth_.clear();
  if (weight_ <= 0) return;
  // In slices, so the temporary copy stays small however long the series is.
  const std::size_t n = raw_.size();
  const CurveColumn& keys = raw_.keys();
  std::vector<double> smoothed;
  for (std::size_t from = 0; from < n; from += Column::kChunk) {
    const std::size_t to = std::min(n, from + Column::kChunk);
    smoothed.clear();
    for (std::size_t i = from; i < to; ++i) smoothed.push_back(ema_.next(raw_.value(i)));
    smooth_.append(CurveColumn::share(keys.entries(), keys.scale(), true),
                   CurveColumn::copy(smoothed.data()), smoothed.size());
  }
}

std::size_t CurveData::ownBytes() const {
  std::size_t n = 0;
  for (const LodSeries* s : {&raw_, &smooth_}) {
    n += s->pyramidBytes();
    for (const CurveColumn* c : {&s->keys(), &s->values()})
      if (!c->shared()) n += c->size() * sizeof(double);
  }
  return n;
}

void CurveData::clear() {
  raw_.clear();
  smooth_.clear();
  ema_.reset();
  extent_ = Extent();
}

}  // namespace ddpdesk

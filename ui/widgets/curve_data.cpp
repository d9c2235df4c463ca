#include "curve_data.h"

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
  if (n == 0) return;
  for (std::size_t i = 0; i < n; ++i) extent_.add(keys[i], values[i]);
  raw_.append(keys, values, n);
  if (weight_ <= 0) return;
  std::vector<double> smoothed(n);
  for (std::size_t i = 0; i < n; ++i) smoothed[i] = ema_.next(values[i]);
  smooth_.append(keys, smoothed.data(), n);
}

void CurveData::setSmoothing(double weight) {
  weight_ = std::clamp(weight, 0.0, 0.999);
  ema_.setWeight(weight_);
  ema_.reset();
  smooth_.clear();
  if (weight_ <= 0) return;
  // In slices, so the temporary copies stay small however long the series is.
  const std::size_t n = raw_.size();
  std::vector<double> keys, smoothed;
  for (std::size_t from = 0; from < n; from += Column::kChunk) {
    const std::size_t to = std::min(n, from + Column::kChunk);
    keys.clear();
    smoothed.clear();
    for (std::size_t i = from; i < to; ++i) {
      keys.push_back(raw_.key(i));
      smoothed.push_back(ema_.next(raw_.value(i)));
    }
    smooth_.append(keys.data(), smoothed.data(), keys.size());
  }
}

void CurveData::clear() {
  raw_.clear();
  smooth_.clear();
  ema_.reset();
  extent_ = Extent();
}

}  // namespace ddpdesk

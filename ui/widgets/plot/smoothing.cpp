#include "plot/smoothing.h"

#include <algorithm>
#include <cmath>

namespace ddpdesk {

void EmaSmoother::setWeight(double weight) {
  weight_ = std::clamp(std::isfinite(weight) ? weight : 0.0, 0.0, 0.999);
  reset();
}

void EmaSmoother::reset() {
  last_ = 0;
  debias_ = 1;
}

double EmaSmoother::next(double value) {
  if (!std::isfinite(value)) return value;
  last_ = last_ * weight_ + (1 - weight_) * value;
  debias_ *= weight_;
  // weight 0: debias_ becomes 0 and 1 - 0 = 1, i.e. the raw value, as it should be.
  return last_ / (1 - debias_);
}

std::vector<double> debiasedEma(const std::vector<double>& values, double weight) {
  EmaSmoother s(weight);
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(s.next(v));
  return out;
}

}  // namespace ddpdesk

// TensorBoard's smoothing: an exponential moving average with its start-up bias removed, so the
// first points are not dragged towards zero. For weight w and values v1..vn:
//   last = last * w + (1 - w) * v;   smoothed = last / (1 - w^k)   (k: finite values so far)
// Non-finite values pass through unsmoothed and do not advance the average (as TensorBoard does).
#pragma once

#include <cstddef>
#include <vector>

namespace ddpdesk {

// Incremental form: feed points one at a time as they arrive; reset() to start over.
class EmaSmoother {
 public:
  explicit EmaSmoother(double weight = 0.0) { setWeight(weight); }
  // Clamped to [0, 0.999]: a weight of 1 would freeze the average at its first value.
  void setWeight(double weight);
  double weight() const { return weight_; }
  void reset();
  double next(double value);

 private:
  double weight_ = 0;
  double last_ = 0;
  double debias_ = 1;  // w^k, multiplied in one step at a time (no pow per point)
};

// Batch form of the same computation.
std::vector<double> debiasedEma(const std::vector<double>& values, double weight);

}  // namespace ddpdesk

#include "plot/x_axis.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ddpdesk {

QString xAxisLabel(XAxis axis) {
  switch (axis) {
    case XAxis::Step:
      return QStringLiteral("optimizer step");
    case XAxis::Samples:
      return QStringLiteral("samples");
    case XAxis::WallTime:
      return QStringLiteral("wall time (s)");
  }
  return {};
}

double keyForStep(const ColumnView& steps, const std::vector<double>& keys, double step) {
  const std::size_t n = std::min(steps.size(), keys.size());
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  // Steps only go back when a run resumes from an older checkpoint; then this picks a point of
  // the right step from one of the sessions, which is close enough to place an eval marker.
  const auto end = steps.begin() + std::ptrdiff_t(n);
  const auto it = std::upper_bound(steps.begin(), end, step);
  if (it == steps.begin()) return keys[0];
  return keys[std::size_t(it - steps.begin()) - 1];
}

}  // namespace ddpdesk

// What the charts put on the x axis, and how a series' columns become monotonic keys.
#pragma once

#include <QString>
#include <cstddef>
#include <vector>

#include "metrics/chunked_array.h"
#include "metrics/session_clock.h"

namespace ddpdesk {

enum class XAxis { Step, Samples, WallTime };

QString xAxisLabel(XAxis axis);  // "optimizer step", "samples", "wall time (s)"

// Turns a column into chart keys, incrementally. Steps and samples are used as they are; wall
// time goes through the run's SessionClock (metrics/session_clock.h: each resumed session
// continues where the previous one ended), keeping one run's curve in time order.
class KeyMapper {
 public:
  explicit KeyMapper(XAxis axis = XAxis::Step) : axis_(axis) {}
  XAxis axis() const { return axis_; }
  void reset() { clock_.reset(); }
  double map(double raw) { return axis_ == XAxis::WallTime ? clock_.map(raw) : raw; }
  // A resume has moved the keys from the column's values (until then, map() returns them as is).
  bool shifted() const { return clock_.shifted(); }

 private:
  XAxis axis_;
  SessionClock clock_;
};

// The columns of one series that can serve as x: a MetricsStore's columns, or views of them.
struct XColumns {
  const ColumnView* step = nullptr;
  const ColumnView* samples = nullptr;
  const ColumnView* time = nullptr;
  const ColumnView& pick(XAxis axis) const {
    return axis == XAxis::Step ? *step : axis == XAxis::Samples ? *samples : *time;
  }
};

// Key of the last point whose step is at most `step` (evaluations carry only a step; their x in
// samples or time comes from the global series). The first key when every step is later; NaN
// when there are no keys. `steps` is expected in ascending order.
double keyForStep(const ColumnView& steps, const std::vector<double>& keys, double step);

}  // namespace ddpdesk

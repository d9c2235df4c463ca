// Turning a MetricsStore's columns into chart curves (a step series' points: CurveData::extend).
// The same functions feed a chart a few points at a time as a run streams in (on the GUI thread,
// from the store's columns) and rebuild every curve at once when the x axis changes or a big run is
// opened (rebuildCurves(), on a worker thread, from views of the columns taken on the GUI thread
// while the store keeps growing: what arrives later is fed from where the views end, so no point is
// lost or doubled).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "metrics/chunked_array.h"
#include "plot/curve_data.h"
#include "plot/x_axis.h"

namespace ddpdesk {

// The evaluations [from, to), without NaN values (no accuracy for a regression). On the step
// axis x is the evaluation's step; otherwise the key of the global series' point with that step
// (`globalSteps`, `globalKeys`). `keys` and `values` are overwritten.
void evalPoints(XAxis axis, const ColumnView& step, const ColumnView& y, std::size_t from,
                std::size_t to, const ColumnView& globalSteps,
                const std::vector<double>& globalKeys, std::vector<double>& keys,
                std::vector<double>& values);
// Extends a global series' keys (x mapped through `mapper`) to its first `to` points.
void extendKeys(const ColumnView& x, std::size_t to, KeyMapper& mapper, std::vector<double>& keys);

// Everything a rebuild reads, as views: safe to hand to another thread.
struct RebuildJob {
  struct Source {
    ColumnView step;  // the global series' steps
    // The global series' x column on `axis`, mapped to the keys that place evaluation points;
    // empty when the chart draws no evaluation curve of this source (nothing to map).
    ColumnView x;
  };
  struct Curve {
    bool evals = false;  // an evaluation curve (x: step) rather than a step series (x: x column)
    ColumnView x, y;
    double scale = 1.0;
    int source = 0;
    double weight = 0;  // smoothing
  };
  XAxis axis = XAxis::Step;
  std::vector<Source> sources;
  std::vector<Curve> curves;
  // Set when the result is no longer wanted: the build stops early.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  std::size_t points() const;
};

struct RebuildResult {
  struct Source {
    KeyMapper mapper;
    std::vector<double> keys;  // the global series' keys (empty on the step axis)
  };
  struct Curve {
    CurveData data;
    KeyMapper mapper;
    std::size_t drawn = 0;  // points of the series taken
  };
  bool cancelled = false;
  std::vector<Source> sources;
  std::vector<Curve> curves;
};

RebuildResult rebuildCurves(const RebuildJob& job);

}  // namespace ddpdesk

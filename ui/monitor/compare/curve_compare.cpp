#include "compare/curve_compare.h"

#include <QtNumeric>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "metrics/metrics_store.h"
#include "metrics/session_clock.h"

namespace ddpdesk {
namespace {

// The training clock, one session after another (session_clock.h: the charts' rule too).
std::vector<double> monotonicTime(const Column& time) {
  std::vector<double> out;
  out.reserve(time.size());
  SessionClock clock;
  for (double t : time) out.push_back(clock.map(t));
  return out;
}

// Sorts by x (stable, so arrival order decides among equal x), keeps the last point of each x.
Curve normalise(std::vector<double> x, std::vector<double> y) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  Curve c;
  for (std::size_t i : order) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
    if (!c.x.empty() && c.x.back() == x[i]) {
      c.y.back() = y[i];
      continue;
    }
    c.x.push_back(x[i]);
    c.y.push_back(y[i]);
  }
  return c;
}

// The store's global x column on `axis` (empty when the series has none).
std::vector<double> globalX(const GlobalSeries& g, CompareX axis) {
  switch (axis) {
    case CompareX::Step:
      return {g.step.begin(), g.step.end()};
    case CompareX::Samples: {
      // A series that never counted samples (an import) has no samples axis.
      const bool any =
          std::any_of(g.samples.begin(), g.samples.end(), [](double s) { return s > 0; });
      return any ? std::vector<double>(g.samples.begin(), g.samples.end())
                 : std::vector<double>(g.size(), qQNaN());
    }
    case CompareX::Time:
      return monotonicTime(g.time);
  }
  return {};
}

// Linear interpolation of `c` at x, which lies within [c.x.front(), c.x.back()].
double at(const Curve& c, double x) {
  const auto it = std::lower_bound(c.x.begin(), c.x.end(), x);
  const std::size_t i = std::size_t(it - c.x.begin());
  if (i < c.size() && c.x[i] == x) return c.y[i];
  const double x0 = c.x[i - 1], x1 = c.x[i];
  const double w = (x - x0) / (x1 - x0);
  return c.y[i - 1] + w * (c.y[i] - c.y[i - 1]);
}

}  // namespace

QString compareXName(CompareX x) {
  switch (x) {
    case CompareX::Step:
      return QStringLiteral("step");
    case CompareX::Samples:
      return QStringLiteral("samples");
    case CompareX::Time:
      return QStringLiteral("time");
  }
  return {};
}

bool parseCompareX(const QString& text, CompareX* out) {
  for (CompareX x : {CompareX::Step, CompareX::Samples, CompareX::Time})
    if (text == compareXName(x)) {
      *out = x;
      return true;
    }
  return false;
}

QString compareXLabel(CompareX x) {
  switch (x) {
    case CompareX::Step:
      return QStringLiteral("optimizer step");
    case CompareX::Samples:
      return QStringLiteral("samples");
    case CompareX::Time:
      return QStringLiteral("wall time (s)");
  }
  return {};
}

QString compareMetricName(CompareMetric m) {
  switch (m) {
    case CompareMetric::Loss:
      return QStringLiteral("global loss");
    case CompareMetric::EvalLoss:
      return QStringLiteral("validation loss");
    case CompareMetric::EvalAccuracy:
      return QStringLiteral("validation accuracy");
    case CompareMetric::Throughput:
      return QStringLiteral("samples/s");
  }
  return {};
}

QString matchingName(Matching m) {
  return m == Matching::Exact ? QStringLiteral("exact") : QStringLiteral("interp");
}

QString matchingDescription(Matching m) {
  return m == Matching::Exact
             ? QStringLiteral("points at the same x only")
             : QStringLiteral(
                   "at the x of the run with fewer points in the common range, the other "
                   "interpolated linearly");
}

bool parseMatching(const QString& text, Matching* out) {
  if (text == QLatin1String("interp"))
    *out = Matching::Interpolate;
  else if (text == QLatin1String("exact"))
    *out = Matching::Exact;
  else
    return false;
  return true;
}

Curve extractCurve(const MetricsStore& store, CompareMetric metric, CompareX axis) {
  const GlobalSeries& g = store.global();
  std::vector<double> gx = globalX(g, axis);
  if (metric == CompareMetric::Loss || metric == CompareMetric::Throughput) {
    const Column& y = metric == CompareMetric::Loss ? g.loss : g.samplesPerSec;
    return normalise(std::move(gx), {y.begin(), y.end()});
  }
  const EvalSeries& e = store.evals();
  const Column& y = metric == CompareMetric::EvalLoss ? e.loss : e.accuracy;
  std::vector<double> x;
  x.reserve(e.size());
  if (axis == CompareX::Step) {
    x.assign(e.step.begin(), e.step.end());
  } else {
    // The training curve in step order, to find where each validation step falls on this axis.
    const Curve steps = normalise({g.step.begin(), g.step.end()}, gx);
    for (double s : e.step) {
      const auto it = std::upper_bound(steps.x.begin(), steps.x.end(), s);
      x.push_back(it == steps.x.begin() ? (steps.empty() ? qQNaN() : steps.y.front())
                                        : steps.y[std::size_t(it - steps.x.begin()) - 1]);
    }
  }
  return normalise(std::move(x), {y.begin(), y.end()});
}

CurveDiff diffCurves(const Curve& reference, const Curve& other, Matching matching) {
  CurveDiff d;
  d.maxAbs = d.maxAt = d.rms = d.xFrom = d.xTo = qQNaN();
  if (reference.empty() || other.empty()) return d;
  const double lo = std::max(reference.x.front(), other.x.front());
  const double hi = std::min(reference.x.back(), other.x.back());
  if (lo > hi) return d;
  std::vector<double> xs;
  if (matching == Matching::Exact) {
    std::set_intersection(reference.x.begin(), reference.x.end(), other.x.begin(), other.x.end(),
                          std::back_inserter(xs));
  } else {
    // The x of the curve with fewer points in the common range, the other interpolated there:
    // every compared point is a logged one of the sparser run, and the denser one's neighbours
    // lie closer together than the sparser's. Equally many: both curves' x (neither is sparser;
    // picking one would make A - B and B - A compare different points).
    const auto inRange = [&](const Curve& c) {
      return std::vector<double>(std::lower_bound(c.x.begin(), c.x.end(), lo),
                                 std::upper_bound(c.x.begin(), c.x.end(), hi));
    };
    const std::vector<double> r = inRange(reference), o = inRange(other);
    if (r.size() != o.size())
      xs = r.size() < o.size() ? r : o;
    else
      std::set_union(r.begin(), r.end(), o.begin(), o.end(), std::back_inserter(xs));
  }
  if (xs.empty()) return d;
  double sumSq = 0;
  d.maxAbs = -1;
  for (double x : xs) {
    const double delta = at(other, x) - at(reference, x);
    d.delta.x.push_back(x);
    d.delta.y.push_back(delta);
    sumSq += delta * delta;
    if (std::abs(delta) > d.maxAbs) {
      d.maxAbs = std::abs(delta);
      d.maxAt = x;
    }
  }
  d.points = xs.size();
  d.xFrom = xs.front();
  d.xTo = xs.back();
  d.rms = std::sqrt(sumSq / double(xs.size()));
  return d;
}

}  // namespace ddpdesk

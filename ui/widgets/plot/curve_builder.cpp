#include "plot/curve_builder.h"

#include <algorithm>
#include <cmath>

namespace ddpdesk {
namespace {

// Points converted per slice: bounds the temporary arrays and how long a cancelled build runs on.
constexpr std::size_t kSlice = 65536;

}  // namespace

void evalPoints(XAxis axis, const ColumnView& step, const ColumnView& y, std::size_t from,
                std::size_t to, const ColumnView& globalSteps,
                const std::vector<double>& globalKeys, std::vector<double>& keys,
                std::vector<double>& values) {
  keys.clear();
  values.clear();
  for (std::size_t i = from; i < to; ++i) {
    if (std::isnan(y[i])) continue;
    const double key = axis == XAxis::Step ? step[i] : keyForStep(globalSteps, globalKeys, step[i]);
    if (std::isnan(key)) continue;
    keys.push_back(key);
    values.push_back(y[i]);
  }
}

void extendKeys(const ColumnView& x, std::size_t to, KeyMapper& mapper, std::vector<double>& keys) {
  for (std::size_t i = keys.size(); i < to; ++i) keys.push_back(mapper.map(x[i]));
}

std::size_t RebuildJob::points() const {
  std::size_t n = 0;
  for (const Curve& c : curves) n += c.y.size();
  return n;
}

RebuildResult rebuildCurves(const RebuildJob& job) {
  RebuildResult r;
  auto cancelled = [&] { return r.cancelled = job.cancelled->load(std::memory_order_relaxed); };
  r.sources.resize(job.sources.size());
  for (std::size_t i = 0; i < job.sources.size(); ++i) {
    RebuildResult::Source& s = r.sources[i];
    s.mapper = KeyMapper(job.axis);
    if (job.axis != XAxis::Step)
      extendKeys(job.sources[i].x, job.sources[i].x.size(), s.mapper, s.keys);
  }
  r.curves.reserve(job.curves.size());
  for (const RebuildJob::Curve& c : job.curves) {
    r.curves.emplace_back();
    RebuildResult::Curve& out = r.curves.back();
    out.data = CurveData(c.weight);
    out.mapper = KeyMapper(job.axis);
    out.drawn = c.y.size();
    if (c.evals) {
      const std::size_t s = std::size_t(c.source);
      std::vector<double> keys, values;
      evalPoints(job.axis, c.x, c.y, 0, c.y.size(), job.sources[s].step, r.sources[s].keys, keys,
                 values);
      out.data.append(keys.data(), values.data(), keys.size());
      continue;
    }
    for (std::size_t a = 0; a < c.y.size(); a += kSlice) {
      if (cancelled()) return r;
      out.data.extend(c.x, c.y, c.scale, std::min(c.y.size(), a + kSlice), out.mapper);
    }
  }
  return r;
}

}  // namespace ddpdesk

// SeriesChart's data path: how curves get their points from the stores — whole rebuilds (on a
// worker thread for big charts) and incremental feeds of what arrived since. The widget side
// (layout, axes, legend, export) is in series_chart.cpp, the axis ranges in
// series_chart_ranges.cpp.
#include <qcustomplot.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <QtConcurrent>
#include <algorithm>
#include <cerrno>
#include <cmath>

#include "metrics/metrics_store.h"
#include "plot/series_chart_internal.h"

namespace ddpdesk {
namespace chart_detail {

QThreadPool* rebuildPool() {
  static QThreadPool* pool = [] {
    auto* p = new QThreadPool;  // leaked on purpose: outlives every chart, joins nothing at exit
    p->setMaxThreadCount(std::max(2, QThread::idealThreadCount() / 2));
    return p;
  }();
  return pool;
}

void asBackgroundWork() {
  // Five nice levels below the thread that started it (Linux keeps a nice value per thread; Qt's
  // thread priorities change nothing under the default scheduling policy). The GUI thread then
  // gets its core back at once when it wakes instead of sharing it with two rebuilds on two
  // cores, and training ranks on the same machine come before a chart rebuild.
  thread_local const bool lowered = [] {
    const id_t self = id_t(syscall(SYS_gettid));
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, self);
    return errno == 0 && setpriority(PRIO_PROCESS, self, std::min(now + 5, 19)) == 0;
  }();
  (void)lowered;  // if it fails, the rebuild runs at normal priority: slower GUI, same result
}

void freeElsewhere(std::vector<CurveData>&& data) {
  if (data.empty()) return;
  auto doomed = std::make_shared<std::vector<CurveData>>(std::move(data));
  // Moved, not copied: a copy left here could be the last owner and free on the GUI thread.
  rebuildPool()->start([doomed = std::move(doomed)]() mutable {
    asBackgroundWork();
    doomed.reset();
  });
}

}  // namespace chart_detail

using chart_detail::asBackgroundWork;
using chart_detail::freeElsewhere;
using chart_detail::rebuildPool;

// Every curve from the start: the columns' views as they are now go to rebuildCurves(), on a
// worker thread when there are many points (the chart shows "Loading…" meanwhile), else here.
// The result stands for the store revisions of the moment the views were taken; sync() then
// feeds whatever arrived since from where each view ended.
void SeriesChart::rebuild() {
  cancelRebuild();
  addNewCurves();  // the curves the layout has now, in order
  needsRebuild_ = false;
  RebuildJob job;
  job.axis = xAxis_;
  cancelled_ = job.cancelled;
  std::vector<quint64> revisions;
  for (const ChartSource& src : sources_) {
    revisions.push_back(src.store ? src.store->revision() : 0);
    if (!src.store) {
      job.sources.emplace_back();
      continue;
    }
    const GlobalSeries& g = src.store->global();
    const XColumns cols{&g.step, &g.samples, &g.time};
    const bool keys = drawsEvals(int(job.sources.size()));
    job.sources.push_back(
        {g.step.view(), keys ? cols.pick(xAxis_).prefix(g.size()) : ColumnView()});
  }
  std::vector<CurveData> old;
  for (auto& c : curves_) {
    old.push_back(c->graph->take());
    job.curves.push_back(curveJob(*c));
  }
  freeElsewhere(std::move(old));
  if (job.points() <= asyncThreshold_) {
    adopt(rebuildCurves(job), revisions);
    return;
  }
  rebuilding_ = true;
  const quint64 generation = ++generation_;
  updateLoading();
  auto* watcher = new QFutureWatcher<RebuildResult>(this);
  connect(watcher, &QFutureWatcher<RebuildResult>::finished, this,
          [this, watcher, generation, revisions] {
            watcher->deleteLater();
            if (generation != generation_) return;  // cancelled: a newer rebuild is on its way
            rebuilding_ = false;
            adopt(watcher->future().takeResult(), revisions);
            sync();
          });
  watcher->setFuture(QtConcurrent::run(rebuildPool(), [job = std::move(job)] {
    asBackgroundWork();
    return rebuildCurves(job);
  }));
}

RebuildJob::Curve SeriesChart::curveJob(const Curve& c) const {
  RebuildJob::Curve j;
  j.source = c.def.source;
  j.weight = c.graph->weight();
  const MetricsStore* store = sources_[c.def.source].store;
  if (!store) return j;
  if (c.def.kind == CurveDef::Kind::Eval) {
    const EvalSeries& e = store->evals();
    j.evals = true;
    j.x = e.step.view();
    j.y = (c.def.value == CurveDef::Value::EvalAccuracy ? e.accuracy : e.loss).view();
    return j;
  }
  Columns cols = columns(*store, c.def);
  if (!cols.y) return j;
  j.x = cols.x->prefix(cols.size);
  j.y = cols.y->prefix(cols.size);
  j.scale = cols.scale;
  return j;
}

void SeriesChart::adopt(RebuildResult&& result, const std::vector<quint64>& revisions) {
  for (std::size_t i = 0; i < state_.size() && i < result.sources.size(); ++i) {
    SourceState& st = state_[i];
    st.seen = sources_[i].store != nullptr;
    st.revision = revisions[i];
    st.globalMapper = result.sources[i].mapper;
    st.globalKeys = std::move(result.sources[i].keys);
  }
  for (std::size_t k = 0; k < curves_.size() && k < result.curves.size(); ++k) {
    Curve& c = *curves_[k];
    RebuildResult::Curve& r = result.curves[k];
    c.graph->adopt(std::move(r.data));
    c.mapper = r.mapper;
    c.drawn = r.drawn;
  }
  needsReplot_ = true;
  updateLoading();
}

SeriesChart::Columns SeriesChart::columns(const MetricsStore& store, const CurveDef& def) const {
  Columns out;
  if (def.kind == CurveDef::Kind::Gauge) {
    // Gauges carry their own step, samples and time columns: every x axis works as for steps.
    const GaugeSeries* g = store.gauges().find(def.rank, def.gauge);
    if (!g) return out;
    const XColumns cols{&g->step, &g->samples, &g->time};
    out.x = &cols.pick(xAxis_);
    out.y = &g->value;
    out.size = g->size();
    out.scale = def.scale;
    return out;
  }
  const bool rank = def.kind == CurveDef::Kind::Rank;
  const StepSeries& rs = store.rankSeries(def.rank);
  const GlobalSeries& gs = store.global();
  const XColumns cols =
      rank ? XColumns{&rs.step, &rs.samples, &rs.time} : XColumns{&gs.step, &gs.samples, &gs.time};
  out.size = rank ? rs.size() : gs.size();
  out.x = &cols.pick(xAxis_);
  switch (def.value) {
    case CurveDef::Value::Loss:
      out.y = rank ? &rs.loss : &gs.loss;
      break;
    case CurveDef::Value::RankSamplesPerSec:
      // Workers report the global rate; each rank's own share is that over the world size.
      out.scale = 1.0 / std::max(1, store.rankCount());
      [[fallthrough]];
    case CurveDef::Value::SamplesPerSec:
      out.y = rank ? &rs.samplesPerSec : &gs.samplesPerSec;
      break;
    default:
      break;
  }
  return out;
}

bool SeriesChart::drawsEvals(int source) const {
  return std::any_of(curves_.begin(), curves_.end(), [source](const auto& c) {
    return c->def.source == source && c->def.kind == CurveDef::Kind::Eval;
  });
}

std::size_t SeriesChart::mappedGlobalKeys(int source) const {
  return source >= 0 && std::size_t(source) < state_.size() ? state_[source].globalKeys.size() : 0;
}

void SeriesChart::updateGlobalKeys(int source) {
  SourceState& st = state_[source];
  const GlobalSeries& g = sources_[source].store->global();
  if (st.globalKeys.size() > g.size()) {
    st.globalKeys.clear();
    st.globalMapper = KeyMapper(xAxis_);
  }
  if (st.globalKeys.empty()) st.globalMapper = KeyMapper(xAxis_);
  const XColumns cols{&g.step, &g.samples, &g.time};
  extendKeys(cols.pick(xAxis_), g.size(), st.globalMapper, st.globalKeys);
}

void SeriesChart::feed(Curve& c) {
  const MetricsStore& store = *sources_[c.def.source].store;
  if (c.def.kind == CurveDef::Kind::Eval) {
    const EvalSeries& e = store.evals();
    const Column& y = c.def.value == CurveDef::Value::EvalAccuracy ? e.accuracy : e.loss;
    std::vector<double> keys, values;
    evalPoints(xAxis_, e.step, y, c.drawn, e.size(), store.global().step,
               state_[c.def.source].globalKeys, keys, values);
    c.drawn = e.size();
    if (!keys.empty()) {
      c.graph->append(keys.data(), values.data(), keys.size());
      needsReplot_ = true;
    }
    return;
  }
  const Columns cols = columns(store, c.def);
  if (!cols.y) return;
  if (cols.size < c.drawn) {  // the store was cleared under us; the reset signal rebuilds
    needsRebuild_ = true;
    return;
  }
  if (cols.size == c.drawn) return;
  c.graph->extend(*cols.x, *cols.y, cols.scale, cols.size, c.mapper);
  c.drawn = cols.size;
  needsReplot_ = true;
}

}  // namespace ddpdesk

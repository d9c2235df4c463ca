// What series_chart.cpp and series_chart_feed.cpp share: a chart's per-curve and per-source
// state, and the thread that rebuilds and frees curves. Not for use outside SeriesChart.
#pragma once

#include <QThreadPool>
#include <memory>
#include <vector>

#include "plot/curve_builder.h"
#include "plot/series_chart.h"
#include "plot/smoothed_graph.h"

namespace ddpdesk {

struct SeriesChart::Curve {
  CurveDef def;
  std::unique_ptr<SmoothedGraph> graph;
  KeyMapper mapper;
  std::size_t drawn = 0;  // points of the store's series already fed
};

// Per source: the revision last drawn, and the global series' keys in the current x mode (eval
// points take their x from them).
struct SeriesChart::SourceState {
  quint64 revision = 0;
  bool seen = false;
  KeyMapper globalMapper;
  std::vector<double> globalKeys;
  std::size_t eventsSeen = 0;
  std::vector<std::pair<double, QString>> restarts;  // (step, cause) of each restart event
};

namespace chart_detail {
// Chart rebuilds run here rather than in Qt's global pool, at a lower priority than the GUI
// thread (asBackgroundWork(), called first in each job): two charts rebuild at once even on two
// cores, and the GUI thread still gets a core whenever it wakes.
QThreadPool* rebuildPool();
void asBackgroundWork();
// Frees curves' points on the rebuild thread: returning a gigabyte of them to the system took
// the GUI thread tens of milliseconds.
void freeElsewhere(std::vector<CurveData>&& data);
}  // namespace chart_detail

}  // namespace ddpdesk

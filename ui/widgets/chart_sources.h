// What a chart draws: one or more runs, each a MetricsStore (the live run's, or one loaded from
// a run directory's metrics.jsonl) with a label for the legend.
#pragma once

#include <QString>
#include <vector>

namespace ddpdesk {

class MetricsStore;

struct ChartSource {
  QString label;
  const MetricsStore* store = nullptr;
};

using ChartSources = std::vector<ChartSource>;

}  // namespace ddpdesk

// What a chart draws: one or more runs, each a MetricsStore (the live run's, or one loaded from
// a run directory's metrics.jsonl) with a label for the legend; and series imported from
// elsewhere (a TensorBoard log's tag), drawn as one curve each on the loss chart.
#pragma once

#include <QString>
#include <vector>

namespace ddpdesk {

class MetricsStore;

struct ChartSource {
  QString label;
  const MetricsStore* store = nullptr;
  // An imported series (tensorboard_import.h): its store's global curve, x = step or wall time,
  // on the loss chart only; it is not a run, so a run shown with it keeps its per-rank curves.
  bool imported = false;
};

using ChartSources = std::vector<ChartSource>;

// The runs among the sources: with more than one, the charts overlay runs.
inline int runCount(const ChartSources& sources) {
  int n = 0;
  for (const ChartSource& s : sources) n += s.imported ? 0 : 1;
  return n;
}

}  // namespace ddpdesk

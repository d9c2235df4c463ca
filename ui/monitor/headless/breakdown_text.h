// The step breakdown in words, for the terminal: headless prints it in its end-of-run summary.
#pragma once

#include <QString>
#include <QStringList>

namespace ddpdesk {

class MetricsStore;

// Each rank's breakdown averaged over the run (weighted by the steps each message covers), a
// header and one line per rank:
//   rank  data ms  fwd ms  bwd ms  comm ms  opt ms  step ms  sync eff.
//   0        0.41    1.62    3.05     0.88    0.37     6.35       85%
// Empty when no rank's messages carried a breakdown (older workers and files).
QStringList formatBreakdownTable(const MetricsStore& store);

}  // namespace ddpdesk

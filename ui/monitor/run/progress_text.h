// Human-readable progress text, shared by the headless progress line and the GUI's status bar.
#pragma once

#include <QString>

#include "metrics/metrics_store.h"

namespace ddpdesk {

// "42s", "4:05", "1:02:03"; "?" when negative (unknown).
QString formatDuration(double seconds);
// "1.234e-05", "0.1235", "n/a" for NaN.
QString formatLoss(double loss);
// "epoch 2/3  step 120/300  loss 0.1235  3456 samples/s  ETA 0:42". totalEpochs <= 0: unknown.
QString formatProgressLine(const RunProgress& p, int totalEpochs);
// The progress bar's format: "step %v / %m  (%p%)" once the run's length is known; before that
// "starting…" while a run is active and "no run" when none is (a figure like "step 0 / 1" would
// describe a run that does not exist).
QString progressBarFormat(qint64 totalSteps, bool active);
// The run's training throughput, each rank's own average (RankAverageThroughput) and their sum, and
// the time spent evaluating apart: "training 22418 samples/s per rank (44836 in all); evaluation
// 1.9s". Empty before any rank trained a counted step.
QString formatThroughputLine(const MetricsStore& store);
// What the lowest rank said as the run's latest session started (its `started` event's detail):
// "resumed from <checkpoint>", "micro-batch 16 × 8 accumulation steps fits (asked 64 × 2)"
// (--fit-batch), both joined by "; ", or empty.
QString startedDetail(const MetricsStore& store);

}  // namespace ddpdesk

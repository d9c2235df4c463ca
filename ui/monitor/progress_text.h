// Human-readable progress text, shared by the headless progress line and the GUI's status bar.
#pragma once

#include <QString>

#include "metrics_store.h"

namespace ddpdesk {

// "42s", "4:05", "1:02:03"; "?" when negative (unknown).
QString formatDuration(double seconds);
// "1.234e-05", "0.1235", "n/a" for NaN.
QString formatLoss(double loss);
// "epoch 2/3  step 120/300  loss 0.1235  3456 samples/s  ETA 0:42". totalEpochs <= 0: unknown.
QString formatProgressLine(const RunProgress& p, int totalEpochs);

}  // namespace ddpdesk

// The headless progress line: redrawn in place on a terminal, one line every few seconds (and at
// every new epoch) when the output is a file or pipe, so logs stay readable.
#pragma once

#include <QElapsedTimer>
#include <QString>

#include "metrics/metrics_store.h"

namespace ddpdesk {

class ProgressPrinter {
 public:
  explicit ProgressPrinter(int totalEpochs);

  void update(const RunProgress& p);
  void finish(const RunProgress& p);
  // Something else is about to be written: leave the in-place line alone.
  void breakLine();

 private:
  void print(const RunProgress& p);

  int epochs_;
  bool tty_;
  bool printed_ = false;
  int lastEpoch_ = -1;
  QString last_;
  QElapsedTimer since_;
};

}  // namespace ddpdesk

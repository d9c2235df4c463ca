// The strip above the charts: Start, Stop and Stacks (their actions carry the shortcuts), the run
// state, elapsed wall time, a progress bar over the run's optimizer steps and the ETA.
#pragma once

#include <QWidget>

#include "run/run_controller.h"

class QAction;
class QLabel;
class QProgressBar;

namespace ddpdesk {

class RunStatusStrip : public QWidget {
  Q_OBJECT
 public:
  // `stacks` may be null (no Stacks button).
  RunStatusStrip(QAction* start, QAction* stop, QAction* stacks = nullptr,
                 QWidget* parent = nullptr);

  // Reads the controller and its store; the window calls it a few times a second.
  void refresh(const RunController& controller);

  QString stateText() const;
  QString elapsedText() const;
  QString etaText() const;
  QProgressBar* progressBar() const { return progress_; }

  // Elapsed wall time of a run: to its end, or to now while it is active; -1 before any run.
  static double elapsedSeconds(const RunController& controller);

 private:
  QLabel* state_;
  QLabel* elapsed_;
  QLabel* eta_;
  QLabel* loss_;
  QProgressBar* progress_;
};

}  // namespace ddpdesk

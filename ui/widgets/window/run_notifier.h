// RunNotifier: what the window tells the desktop about its run (DesktopNotifications), so a person
// who has looked away learns that a long run ended or went wrong:
//   finished                 "ddpdesk: <run> finished"       steps, loss, time
//   failed                   "ddpdesk: <run> failed"         the first line of the reason
//                                                            (a non-finite loss names it there)
//   stopped, not by the user "ddpdesk: <run> stopped"        the first line of the reason
//   stalled                  "ddpdesk: <run> stalled"        why (RunController::stalled)
//   non-finite loss          "ddpdesk: <run>: non-finite loss at step N" (a run that goes on)
//   restarting               "ddpdesk: <run> restarting (k of N)" the cause
// A run ends on the desktop unless the window is the active one and the run was short (under
// longRunSeconds()): whoever watches it sees it end. A stop the user asked for is not notified.
// Mid-run events (stalled, non-finite loss, restarting) are notified only while the window is not
// the active one; a stall and a non-finite loss once per run each.
// The slots take the signals of RunController and of what watches a run, so wiring one more is one
// connect() line.
#pragma once

#include <QObject>
#include <QString>
#include <functional>

#include "run/run_controller.h"

namespace ddpdesk {

class DesktopNotifications;

class RunNotifier : public QObject {
  Q_OBJECT
 public:
  // Follows `controller`'s runs and notifies through `notifications`.
  RunNotifier(RunController* controller, DesktopNotifications* notifications,
              QObject* parent = nullptr);

  // Whether the person is looking at the run now (the window: QWidget::isActiveWindow()); unset:
  // never, so everything is notified.
  void setWatched(std::function<bool()> watched) { watched_ = std::move(watched); }
  // Runs at least this long notify their end even while watched (default 300 s).
  void setLongRunSeconds(int s) { long_run_s_ = s; }
  int longRunSeconds() const { return long_run_s_; }

 public Q_SLOTS:
  // The run looks stalled (RunController::stalled, a hang detector).
  void runStalled(const QString& why);
  // The run's loss became NaN or infinite at `step`, and the run goes on.
  void lossNotFinite(qint64 step);
  // The run restarts (attempt `attempt` of `maxRestarts`) after `cause`
  // (RunController::restarting, connected here).
  void restarting(int attempt, int maxRestarts, const QString& cause);

 private:
  void onState(RunController::State state);
  bool watched() const { return watched_ && watched_(); }
  void notifyMidRun(const QString& what, const QString& body, bool critical);

  RunController* controller_;
  DesktopNotifications* notifications_;
  std::function<bool()> watched_;
  int long_run_s_ = 300;
  bool stall_said_ = false;       // this run's
  bool non_finite_said_ = false;  // this run's
};

}  // namespace ddpdesk

// StartStopActions: the window's Start, Stop and Stacks actions (menu, shortcuts, the buttons of
// RunStatusStrip) and when each applies: Start while no run is active and the form is valid, Stop
// while one is (it reads Kill once a stop is under way), Stacks while one is and its stacks are
// not being taken already (RunController::takeStacks), the form editable only between runs.
#pragma once

#include <QObject>

class QAction;

namespace ddpdesk {

class RunController;
class RunSpecForm;

class StartStopActions : public QObject {
  Q_OBJECT
 public:
  StartStopActions(RunController* controller, RunSpecForm* form, QObject* parent = nullptr);

  QAction* start() const { return start_; }
  QAction* stop() const { return stop_; }
  QAction* stacks() const { return stacks_; }
  // Enables, names and explains the actions for the controller's state and the form.
  void update();

 private:
  RunController* controller_;
  RunSpecForm* form_;
  QAction* start_;
  QAction* stop_;
  QAction* stacks_;
};

}  // namespace ddpdesk

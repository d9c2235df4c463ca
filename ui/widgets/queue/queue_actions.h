// QueueActions: the window's side of the run queue. The queue starts its runs through RunLifecycle
// (so they reset the live views like a Start); the form's spec is queued when valid; Sweep…
// opens the dialog around it and queues its runs with their sweep directory; the queue file is
// read at start-up, and runs left waiting in it wait for Resume rather than starting on their own.
#pragma once

#include <QByteArray>
#include <QObject>

#include "sweep.h"

class QWidget;

namespace ddpdesk {

class RunController;
class RunLifecycle;
class RunSpecForm;
class RunQueue;

class QueueActions : public QObject {
  Q_OBJECT
 public:
  // `dialogParent`: the window the Sweep dialog belongs to.
  QueueActions(RunQueue* queue, RunController* controller, RunLifecycle* flow, RunSpecForm* form,
               QWidget* dialogParent);

  // Reads the queue file (RunQueue::defaultPath()); runs waiting in it pause the queue.
  void load();
  // Queues the form's spec (it starts at once when the queue is not paused and no run is active).
  bool addFromForm();
  void openSweepDialog();
  // Queues a sweep's runs, with its directory (definition, index); false with an error.
  bool queueSweep(const SweepPlan& plan, const QByteArray& definition);

 Q_SIGNALS:
  void message(const QString& text);
  void error(const QString& text);
  void sweepQueued();  // the queue is worth showing

 private:
  RunQueue* queue_;
  RunController* controller_;
  RunLifecycle* flow_;
  RunSpecForm* form_;
  QWidget* dialogParent_;
};

}  // namespace ddpdesk

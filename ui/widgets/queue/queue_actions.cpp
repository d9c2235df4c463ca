#include "queue/queue_actions.h"

#include "form/run_spec_form.h"
#include "queue/run_queue.h"
#include "queue/sweep_dialog.h"
#include "queue/sweep_directory.h"
#include "run/run_controller.h"
#include "window/run_lifecycle.h"

namespace ddpdesk {

QueueActions::QueueActions(RunQueue* queue, RunController* controller, RunLifecycle* flow,
                           RunSpecForm* form, QWidget* dialogParent)
    : QObject(dialogParent),
      queue_(queue),
      controller_(controller),
      flow_(flow),
      form_(form),
      dialogParent_(dialogParent) {
  queue_->setLauncher([this](const RunSpec& spec, QString* error) {
    if (!flow_->startLive(spec, error)) return false;
    Q_EMIT message(tr("Queue: started %1").arg(controller_->runDirectory()));
    return true;
  });
  SweepDirectory::follow(queue_);
  connect(queue_, &RunQueue::message, this, &QueueActions::message);
}

void QueueActions::load() {
  QString why;
  if (!queue_->load(RunQueue::defaultPath(), &why)) {
    Q_EMIT error(tr("The run queue could not be read, so it starts empty: %1").arg(why));
    return;
  }
  // Opening the window never starts training by itself: runs left waiting (one interrupted by
  // a crash, say) go on when the queue is resumed.
  if (queue_->pendingCount() > 0 && !queue_->isPaused()) {
    queue_->setPaused(true);
    Q_EMIT message(tr("The queue has %1 run(s) waiting; Resume queue continues it")
                       .arg(queue_->pendingCount()));
  }
}

bool QueueActions::addFromForm() {
  if (!flow_->acceptForm()) return false;
  RunSpec spec = form_->spec();
  spec.resume.clear();  // the queue resumes its own runs
  queue_->add(spec);
  queue_->startNext();
  return true;
}

void QueueActions::openSweepDialog() {
  auto* dialog = new SweepDialog(form_->spec(), dialogParent_);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this,
          [this, dialog] { queueSweep(dialog->plan(), dialog->definition()); });
  dialog->open();
}

bool QueueActions::queueSweep(const SweepPlan& plan, const QByteArray& definition) {
  if (!plan.ok()) {
    Q_EMIT error(QString::fromStdString(plan.error));
    return false;
  }
  QString why;
  const QString dir = SweepDirectory::create(plan, definition, &why);
  if (dir.isEmpty()) {
    Q_EMIT error(why);
    return false;
  }
  if (plan.stop_on_failure) queue_->setStopOnFailure(true);
  SweepDirectory::addRuns(plan, dir, queue_);
  Q_EMIT sweepQueued();
  Q_EMIT message(tr("Queued %1 run(s) of sweep %2").arg(plan.runs.size()).arg(dir));
  queue_->startNext();
  return true;
}

}  // namespace ddpdesk

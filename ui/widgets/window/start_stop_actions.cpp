#include "window/start_stop_actions.h"

#include <QAction>

#include "form/run_spec_form.h"
#include "run/run_controller.h"

namespace ddpdesk {

StartStopActions::StartStopActions(RunController* controller, RunSpecForm* form, QObject* parent)
    : QObject(parent), controller_(controller), form_(form) {
  start_ = new QAction(tr("Start"), this);
  start_->setShortcut(QKeySequence(tr("Ctrl+R")));
  start_->setToolTip(tr("Launch the ranks with this configuration (Ctrl+R)"));
  stop_ = new QAction(tr("Stop"), this);
  stop_->setShortcut(QKeySequence(tr("Ctrl+.")));
  stop_->setToolTip(tr("Stop gracefully at the next optimizer step, with a checkpoint (Ctrl+.)"));
  stacks_ = new QAction(tr("Stacks"), this);
  stacks_->setShortcut(QKeySequence(tr("Ctrl+Shift+K")));
  stacks_->setToolTip(
      tr("Take every rank's stack now, without stopping the run (gdb or "
         "eu-stack, and Python's faulthandler), and say where each rank is "
         "(Ctrl+Shift+K)"));
}

void StartStopActions::update() {
  const bool active = controller_->isActive();
  start_->setEnabled(!active && form_->isValid());
  stop_->setEnabled(active);
  stacks_->setEnabled(active && !controller_->takingStacks());
  const bool stopping = controller_->state() == RunController::State::Stopping;
  stop_->setText(stopping ? tr("Kill") : tr("Stop"));
  stop_->setToolTip(stopping ? tr("Kill the ranks now, without waiting for a checkpoint")
                             : tr("Stop gracefully at the next optimizer step, with a checkpoint "
                                  "(Ctrl+.)"));
  form_->setEnabled(!active);
}

}  // namespace ddpdesk

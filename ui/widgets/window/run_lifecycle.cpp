#include "window/run_lifecycle.h"

#include <QFileInfo>
#include <memory>

#include "checks/pre_start_check.h"
#include "form/run_spec_form.h"
#include "form/slurm_preview_dialog.h"
#include "form/spec_settings.h"
#include "history/history_panel.h"
#include "live/log_view.h"
#include "run/run_directory.h"

namespace ddpdesk {

RunLifecycle::RunLifecycle(RunController* controller, RunSpecForm* form, LogView* log,
                           HistoryPanel* history, QObject* parent)
    : QObject(parent), controller_(controller), form_(form), log_(log), history_(history) {
  connect(controller_, &RunController::stateChanged, this,
          [this](RunController::State s) { onStateChanged(s); });
}

bool RunLifecycle::acceptForm() {
  if (form_->isValid()) return true;
  const auto errors = form_->errors();
  Q_EMIT error(tr("The configuration is not valid: %1 %2").arg(errors.firstKey(), errors.first()));
  return false;
}

bool RunLifecycle::startFromForm() {
  if (controller_->isActive() || !acceptForm()) return false;
  if (resumeCheck_) resumeCheck_->cancel();  // a resume still being checked gives way
  return launch(form_->spec());
}

void RunLifecycle::startWhenReady() {
  if (!form_->waitingOnly()) {
    startFromForm();
    return;
  }
  Q_EMIT message(tr("Waiting for the GPU count or the task check before starting"));
  auto conn = std::make_shared<QMetaObject::Connection>();
  *conn = connect(form_, &RunSpecForm::specChanged, this, [this, conn] {
    if (form_->waitingOnly()) return;
    disconnect(*conn);
    startFromForm();  // starts, or says why the probe's or the check's answer rules the spec out
  });
}

bool RunLifecycle::resume(const QString& runDir) {
  if (controller_->isActive()) return false;
  const auto record = RunDirectory::readRecord(runDir);
  if (!record || !record->specValid) {
    Q_EMIT error(tr("%1 holds no readable spec.json").arg(runDir));
    return false;
  }
  RunSpec spec = record->spec;
  spec.resume = QFileInfo(runDir).absoluteFilePath().toStdString();
  spec.run_dir.clear();  // the controller continues in the resumed directory
  // The checkpoint first, as headless and the queue do: one the ranks would refuse (torn, of
  // another model, a run already past its epochs) is said in one line and nothing is started
  // or written. A Slurm spec's batch script is shown first instead (its job checks it).
  if (spec.is_slurm() || !needsPreStartCheck(spec)) return launch(spec);
  if (!resumeCheck_) {
    resumeCheck_ = new PreStartCheck(this);
    connect(resumeCheck_, &PreStartCheck::finished, this, &RunLifecycle::onResumeChecked);
  }
  resumeSpec_ = spec;
  Q_EMIT message(tr("Checking the checkpoint of %1 (ddpdesk-worker --check)").arg(runDir));
  resumeCheck_->start(spec, controller_->workerProgram());
  return true;
}

void RunLifecycle::onResumeChecked(const QString& problem, const QString& warning) {
  if (!problem.isEmpty()) {
    Q_EMIT error(tr("Could not resume the run: %1").arg(problem));
    return;
  }
  if (!warning.isEmpty()) Q_EMIT message(warning);
  if (controller_->isActive()) return;  // another run started meanwhile
  launch(resumeSpec_);
}

bool RunLifecycle::launch(const RunSpec& spec) {
  if (spec.is_slurm() && !submitting_) {
    // The batch script first (nothing is written yet); Submit comes back here with the run
    // directory the script names.
    if (preview_) preview_->close();
    preview_ = new SlurmPreviewDialog(spec, controller_->workerProgram(), form_->window());
    preview_->setAttribute(Qt::WA_DeleteOnClose);
    connect(preview_, &SlurmPreviewDialog::submitRequested, this, [this](const RunSpec& s) {
      submitting_ = true;
      launch(s);
      submitting_ = false;
    });
    preview_->open();
    return true;
  }
  QString why;
  if (!startLive(spec, &why)) {
    Q_EMIT error(tr("Could not start the run: %1").arg(why));
    return false;
  }
  if (spec.resume.empty()) saveLastSpec(spec);
  return true;
}

bool RunLifecycle::startLive(const RunSpec& spec, QString* why) {
  log_->clear();
  log_->clearFailure();
  log_->setWorld(spec.world_size());
  if (!controller_->start(spec, why)) return false;
  Q_EMIT liveRunShown();
  history_->setActiveRun(controller_->runDirectory());
  history_->refresh();
  Q_EMIT message(
      tr("Started %1 rank(s) in %2").arg(spec.world_size()).arg(controller_->runDirectory()));
  Q_EMIT stateShown();
  return true;
}

bool RunLifecycle::follow(const QString& runDir) {
  if (controller_->isActive()) {
    Q_EMIT error(tr("A run is active: stop it or wait for it before following another"));
    return false;
  }
  QString why;
  if (!controller_->attach(runDir, &why)) {
    Q_EMIT error(tr("Could not follow the run: %1").arg(why));
    return false;
  }
  log_->clear();
  log_->clearFailure();
  // The (disabled) form shows what the followed run runs, not the person's draft, which comes
  // back when the run ends. Only a run directory here says its spec (an ssh one: not yet read).
  if (const auto record = RunDirectory::readRecord(runDir); record && record->specValid) {
    draftBeforeFollow_ = form_->spec();
    form_->setSpec(record->spec);
  }
  Q_EMIT liveRunShown();
  Q_EMIT message(tr("Following %1").arg(controller_->runDirectory()));
  Q_EMIT stateShown();
  return true;
}

RunSpec RunLifecycle::draftSpec() const {
  return draftBeforeFollow_ ? *draftBeforeFollow_ : form_->spec();
}

void RunLifecycle::stop() {
  if (controller_->state() == RunController::State::Stopping) {
    controller_->kill();  // a second Stop: do not wait for the step boundary
    return;
  }
  controller_->stop();
}

void RunLifecycle::stopToClose() {
  closeAfterStop_ = true;
  Q_EMIT message(tr("Stopping the run; the window closes when every rank has exited"));
  controller_->stop();
}

void RunLifecycle::onStateChanged(RunController::State s) {
  Q_EMIT stateShown();
  if (!RunController::isTerminal(s)) return;
  if (draftBeforeFollow_) {
    form_->setSpec(*draftBeforeFollow_);
    draftBeforeFollow_.reset();
  }
  log_->flush();
  history_->setActiveRun(QString());
  history_->refresh();
  const QString reason = controller_->reason();
  if (const QString why = controller_->metricsIncomplete(); !why.isEmpty())
    log_->appendLine(LogBuffer::kMonitor, true, tr("metrics.jsonl is incomplete: %1").arg(why));
  if (s == RunController::State::Failed) {
    log_->showFailure(tr("Run failed"), reason);
    const auto& f = controller_->failure();
    if (f.rank >= 0) log_->setFilter(f.rank);  // the failed rank's whole output
    Q_EMIT failureShown();
    Q_EMIT message(tr("Run failed: %1").arg(reason.section(QLatin1Char('\n'), 0, 0)));
  } else if (s == RunController::State::Finished) {
    Q_EMIT message(tr("Run finished"));
  } else {
    // Whether the stop left something to resume from is what a person wants to know next.
    const std::optional<RunRecord> record = RunDirectory::readRecord(controller_->runDirectory());
    const QString checkpoint = record && !record->checkpoints.isEmpty()
                                   ? tr("; checkpoint %1 saved: Resume it from the History tab")
                                         .arg(QFileInfo(record->checkpoints.front()).fileName())
                                   : tr("; no checkpoint was written");
    Q_EMIT message(tr("Run stopped: %1").arg(reason) + checkpoint);
  }
  if (closeAfterStop_) Q_EMIT closeWhenEnded();
}

}  // namespace ddpdesk

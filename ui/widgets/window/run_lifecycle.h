// RunLifecycle: how the window starts, stops, resumes and follows runs. A start from the form
// checks the spec first, a resume its checkpoint (the worker's dry run); every start or follow
// resets the log and the history's active run; the end of a run flushes the log, refreshes the
// history and, for a failure, shows the failed rank's output. It drives the RunController and the
// views it is given, and tells the window the rest through signals (status line, errors, the live
// charts, the Log tab), so it is tested with real widgets but no window.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <optional>

#include "checks/pre_start_check.h"
#include "form/slurm_preview_dialog.h"  // complete for QPointer
#include "run/run_controller.h"

namespace ddpdesk {

class HistoryPanel;
class LogView;
class RunSpecForm;

class RunLifecycle : public QObject {
  Q_OBJECT
 public:
  RunLifecycle(RunController* controller, RunSpecForm* form, LogView* log, HistoryPanel* history,
               QObject* parent = nullptr);

  // Whether the form's spec is valid; when not, error() names the first field at fault.
  bool acceptForm();
  // The form's spec, when it is valid (otherwise error() says why); false when not started.
  bool startFromForm();
  // Starts now, or as soon as the form becomes valid when all it waits for is an answer (the GPU
  // probe, the task check); otherwise reports the problem like startFromForm().
  void startWhenReady();
  // Continues a stopped run from its directory (resume = that directory), once the worker's
  // dry run has loaded its checkpoint (PreStartCheck, in the background): true when that check
  // (or the start) is under way; a checkpoint it rejects comes back as error().
  bool resume(const QString& runDir);
  // Whether a resume waits for its checkpoint check.
  bool checkingResume() const { return resumeCheck_ && resumeCheck_->running(); }
  // Starts `spec` without an error box (the queue reports its own failures).
  bool startLive(const RunSpec& spec, QString* error);
  // Follows a run started elsewhere (RunController::attach).
  bool follow(const QString& runDir);
  // A graceful stop; a second one, while stopping, kills the ranks.
  void stop();
  // Stops the run so that the window can close: closeWhenEnded() comes once every rank is gone.
  void stopToClose();
  bool stoppingToClose() const { return closeAfterStop_; }
  // The person's spec: the form's, or while a followed run shows its own there, their draft.
  RunSpec draftSpec() const;
  // A Slurm spec's start (form or resume) first shows its batch script here; Submit starts it.
  SlurmPreviewDialog* slurmPreview() const { return preview_; }

 Q_SIGNALS:
  void message(const QString& text);  // for the status line
  void error(const QString& text);    // for the user to see and acknowledge
  void liveRunShown();                // a run started or is followed: the charts show it
  void stateShown();                  // the actions and the live views should be redrawn
  void failureShown();                // a failed run's log is on show: bring it forward
  void closeWhenEnded();              // after stopToClose(), the run has ended

 private:
  bool launch(const RunSpec& spec);
  void onResumeChecked(const QString& problem, const QString& warning);
  void onStateChanged(RunController::State state);

  RunController* controller_;
  RunSpecForm* form_;
  LogView* log_;
  HistoryPanel* history_;
  bool closeAfterStop_ = false;
  QPointer<SlurmPreviewDialog> preview_;
  bool submitting_ = false;                   // launch() called back from the preview's Submit
  PreStartCheck* resumeCheck_ = nullptr;      // child, made at the first resume
  RunSpec resumeSpec_;                        // the resume it checks
  std::optional<RunSpec> draftBeforeFollow_;  // the form's spec while a followed run shows its own
};

}  // namespace ddpdesk

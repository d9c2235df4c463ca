// TaskCheckGate: when the run form's user task needs a new dry run. The form tells it the spec
// after every edit; a change to a field the check depends on (isTaskCheckField) restarts a short
// debounce, after which `ddpdesk-worker --check` runs in the background (TaskCheck). The result
// that applies to the spec now is Pending until the answer for exactly that spec is in, so an
// answer to an older spec never gates Start.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <functional>
#include <string>

#include "checks/task_check.h"

namespace ddpdesk {

class TaskCheckGate : public QObject {
  Q_OBJECT
 public:
  explicit TaskCheckGate(QObject* parent = nullptr);

  // Asked at every check, so it follows the window's controller. Unset:
  // RunController::defaultWorkerProgram() ($DDPDESK_WORKER, or next to the app).
  void setWorkerProgram(std::function<QString()> program) { program_ = std::move(program); }
  QString workerProgram() const;
  void setDelay(int ms) { debounce_.setInterval(ms); }

  // The spec as the form has it now. `checkable`: it needs the check and every field the check
  // reads is valid; otherwise nothing runs and any running check is abandoned. Returns the
  // result for this spec (Pending while it is waited for, or when not checkable).
  const TaskCheckResult& update(const RunSpec& spec, bool checkable);
  // Forget the last answer: the next update() checks again even if nothing changed (a file
  // picked again after it was fixed on disk).
  void recheck();
  const TaskCheckResult& result() const { return result_; }
  bool running() const { return check_->running(); }

 Q_SIGNALS:
  // The answer for the current spec arrived (or the check gave up): the form re-applies it.
  void answered();

 private:
  void launch();

  std::function<QString()> program_;
  TaskCheck* check_;
  QTimer debounce_;
  RunSpec spec_;
  std::string key_;      // what the current spec's answer depends on; empty = nothing to check
  std::string running_;  // the key of the check in flight
  TaskCheckResult result_;
};

}  // namespace ddpdesk

// The dry run of a task: `ddpdesk-worker --check <spec flags>` loads the model and data exactly as
// a run would, pushes one sample through forward and loss, and answers with one JSON line. The
// form runs it (TaskCheck, never blocking the GUI thread) so that a user task's files are known
// good before Start; headless runs it once, synchronously, before any rank of such a task is
// spawned (runTaskCheckNow). Widget-free: part of the monitor core.
#pragma once

#include <QByteArray>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include "run_spec.h"

class QProcess;
class QTimer;

namespace ddpdesk {

struct TaskCheckResult {
  enum class Status {
    Pending,   // not answered yet
    Ok,        // the worker loaded everything and computed a loss
    Failed,    // the check itself did not work (worker missing, crashed, timed out, no answer)
    BadInput,  // the worker named a field of the spec that is wrong
  };
  Status status = Status::Pending;
  QString field;  // BadInput: the spec field at fault (JSON key, e.g. "model")
  QString error;  // BadInput: the worker's line ("invalid --model 'x.pt': ..."); Failed: why
  QString why;    // BadInput: the line's reason alone ("not a TorchScript file"), when it has one
  QString task;
  qint64 parameters = 0;  // trainable scalars
  qint64 parameterTensors = 0;
  qint64 buffers = 0;
  qint64 trainSamples = 0;
  qint64 evalSamples = 0;
  QString inputDtype;  // the training tensors, first dimension = sample
  QList<qint64> inputShape;
  QString targetDtype;
  QList<qint64> targetShape;
  QList<qint64> outputShape;  // one sample's output
  QString loss;
  bool classification = false;
  QStringList warnings;

  bool ok() const { return status == Status::Ok; }
  // What a form shows under the field (the field names itself there): the worker's reason
  // alone, or the whole line when it gave none.
  QString fieldMessage() const { return why.isEmpty() ? error : why; }
};

// Whether a spec's task trains the user's files and so needs the check before it runs.
bool needsTaskCheck(const RunSpec& spec);
// Whether a spec resumes from a checkpoint this machine can read: the dry run then loads it as
// the ranks would (a missing or torn checkpoint, one of another model, a run already past the
// epochs are bad input, found before anything is started or written).
bool needsResumeCheck(const RunSpec& spec);
// Whether a field decides the check's answer (the task, the device, how much data, every
// user-task field, and the checkpoint resumed with the epochs it must not be past); other fields
// (lr, ...) do not need a new check.
bool isTaskCheckField(const std::string& key);
// The spec the check runs: only the task-check fields of `spec`, the rest at their defaults (so
// nothing of the run, like its directory or metrics file, reaches the dry run).
RunSpec taskCheckSpec(const RunSpec& spec);
// `--check` plus workerArguments(taskCheckSpec(spec)).
QStringList taskCheckArguments(const RunSpec& spec);

// The worker's answer: the last line of stdout that is a JSON object. No such line = Failed.
TaskCheckResult parseTaskCheck(const QByteArray& output);
// The answer of a finished `--check` process: its JSON when it gave one that fits the exit code
// (0 and ok, or 2 and a named field), otherwise Failed with the exit code and stderr's last line.
TaskCheckResult taskCheckFromExit(int exitCode, bool crashed, const QByteArray& out,
                                  const QByteArray& err);

// Runs `program --check ...` and waits for it (at most timeoutMs). For headless, not the GUI.
TaskCheckResult runTaskCheckNow(const QString& program, const RunSpec& spec,
                                int timeoutMs = 120000);

// One line for the form: "535,818 parameters · 60,000 train samples [1,28,28] float32 → targets
// int64 · 10,000 eval samples". Empty unless the check passed.
QString taskCheckSummary(const TaskCheckResult& r);

// Runs the check in the background, like DeviceProbe.
class TaskCheck : public QObject {
  Q_OBJECT
 public:
  explicit TaskCheck(QObject* parent = nullptr);
  ~TaskCheck() override;

  // Starts a check of `spec`; one still running is abandoned (killed, its answer never emitted).
  // Gives up after timeoutMs with a Failed result.
  void start(const QString& program, const RunSpec& spec, int timeoutMs = 120000);
  // Abandons the running check, if any; result() goes back to Pending.
  void cancel();
  bool running() const { return proc_ != nullptr; }
  const TaskCheckResult& result() const { return result_; }

 Q_SIGNALS:
  void finished(const ddpdesk::TaskCheckResult& result);

 private:
  void abandon();
  void finish(TaskCheckResult r);

  QProcess* proc_ = nullptr;
  QTimer* timer_;
  int timeoutMs_ = 0;
  TaskCheckResult result_;
};

}  // namespace ddpdesk

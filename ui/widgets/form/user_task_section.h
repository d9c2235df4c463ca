// UserTaskSection: the run form's rows for the user's own task (TaskInfo::user_files: model and
// data files, loss, tensor names) and the gate in front of them. The rows are seen only for such
// a task (or while one of them holds a problem); the worker's dry run (`ddpdesk-worker --check`,
// through TaskCheckGate) must pass before the form is valid: its complaint goes under the field
// it names, its summary under the rows. The RunSpecForm builds the rows (FieldRow) and places the
// user task's here; it maps the spec and asks this section for the check's verdict.
#pragma once

#include <QMap>
#include <QSet>
#include <QString>
#include <QWidget>

#include "checks/task_check.h"
#include "run_spec.h"

class QFormLayout;
class QLabel;

namespace ddpdesk {

class FieldRow;
class TaskCheckGate;

class UserTaskSection : public QWidget {
  Q_OBJECT
 public:
  explicit UserTaskSection(QWidget* parent = nullptr);

  // Whether the RunSpecForm puts a field's row here (is_user_task_field).
  static bool holds(const QString& key);
  // Below the rows added before, above the check's summary. A file picked again with "…"
  // asks for a new check even when the path is the same.
  void addRow(FieldRow* row);

  // The check's verdict on `spec` joins `errors` (field -> message); a message that is an awaited
  // answer, not a problem, is also put in `pending`. Checked only once every field the check
  // reads is fine by the shared rules already in `errors`: until then their messages say what
  // to fix.
  void applyTaskCheck(const RunSpec& spec, QMap<QString, QString>& errors, QSet<QString>& pending);
  // Shows the rows for a task with user files, or while `errors` names one of them (a bad loss
  // from a preset must not be invisible), and the summary when the check passed.
  void showFor(const RunSpec& spec, const QMap<QString, QString>& errors);

  TaskCheckGate* gate() const { return gate_; }
  const TaskCheckResult& taskCheck() const;
  // The line under the rows: the check's summary when it passed.
  QLabel* checkLabel() const { return checkLabel_; }

 Q_SIGNALS:
  // The check's answer for the current spec arrived: the form validates again.
  void answered();

 private:
  QFormLayout* form_;
  QList<FieldRow*> rows_;
  TaskCheckGate* gate_;
  QLabel* checkLabel_;
};

}  // namespace ddpdesk

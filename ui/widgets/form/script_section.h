// ScriptSection: the run form's rows for a Python-script run (task python: the script, its
// arguments with their {placeholders}, the interpreter, the working directory), under the task,
// seen only for that task (or while one of them holds a problem), with a line naming what the
// placeholders are. The RunSpecForm builds the rows (FieldRow) and places the script's here.
#pragma once

#include <QList>
#include <QMap>
#include <QString>
#include <QWidget>

#include "run_spec.h"

class QFormLayout;
class QLabel;

namespace ddpdesk {

class FieldRow;

class ScriptSection : public QWidget {
  Q_OBJECT
 public:
  explicit ScriptSection(QWidget* parent = nullptr);

  // Whether the RunSpecForm puts a field's row here (is_script_field).
  static bool holds(const QString& key);
  void addRow(FieldRow* row);
  // Shows the rows for task python, or while `errors` names one of them.
  void showFor(const RunSpec& spec, const QMap<QString, QString>& errors);

 private:
  QFormLayout* form_;
  QList<FieldRow*> rows_;
  QLabel* hint_;
};

}  // namespace ddpdesk

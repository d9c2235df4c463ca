// RunSpecForm: the run configuration panel. One editor per RunSpec field (built from
// run_spec_fields(), so a new field shows up here without code), parsed and checked with the
// shared rules (apply_fields + validate) on every edit; the problem is shown under the field.
// Also: the effective global batch as you type, the GPU count bounded by what
// `ddpdesk-worker --probe` reported, presets as JSON files. The form composes its parts: a
// FieldRow per field, the user task's rows and its dry-run gate (UserTaskSection), the launcher
// box (LauncherSection); it maps the rows to and from a RunSpec and decides validity.
#pragma once

#include <QMap>
#include <QSet>
#include <QString>
#include <QWidget>
#include <functional>

#include "checks/device_probe.h"
#include "checks/task_check.h"
#include "run_spec.h"

class QFormLayout;
class QLabel;
class QToolButton;

namespace ddpdesk {

class FieldRow;
class LauncherSection;
class ScriptSection;
class UserTaskSection;

class RunSpecForm : public QWidget {
  Q_OBJECT
 public:
  explicit RunSpecForm(QWidget* parent = nullptr);

  // The spec as the editors describe it (valid or not; isValid() says which).
  RunSpec spec() const { return spec_; }
  void setSpec(const RunSpec& spec);
  bool isValid() const { return errors_.isEmpty(); }
  // Field key -> the problem shown next to it.
  QMap<QString, QString> errors() const { return errors_; }
  QString effectiveBatchText() const;
  // What an empty dataset size means for the task in the form: "60,000 (task default)".
  QString datasetDefaultText() const;

  // The probe's answer bounds the GPU count when the device is CUDA.
  void setProbeResult(const ProbeResult& result);
  bool probePending() const { return probe_.status == ProbeResult::Status::Pending; }
  // True when the form is invalid only because answers are still awaited (the GPU probe, the
  // task check): nothing to fix, just wait.
  bool waitingOnly() const;

  // The worker that answers the task check; asked at each check (default: $DDPDESK_WORKER, or
  // ddpdesk-worker next to the app). The debounce between an edit and the check (ms).
  void setWorkerProgram(std::function<QString()> program);
  void setTaskCheckDelay(int ms);
  // The check's answer for the spec in the form (Pending while awaited or not applicable).
  const TaskCheckResult& taskCheck() const;
  // The line under the user-task rows: the check's summary when it passed.
  QLabel* taskCheckLabel() const;
  // The launcher box (local or Slurm, and the Slurm job's fields).
  LauncherSection* launcherSection() const { return launcher_; }
  // Whether a field's row is shown (the user-task rows only for tasks with user files).
  bool isFieldShown(const QString& key) const;

  // Presets: the RunSpec JSON. Loading applies every field it can and reports the rest.
  QStringList loadPresetFile(const QString& path);
  bool savePresetFile(const QString& path, QString* error = nullptr);

  // For tests and for the window: the editor of a field (QLineEdit, QComboBox, QSpinBox, or a
  // QCheckBox for a 0/1 field: text "1" or "0"), its message label, and a way to type into it as
  // a person would.
  QWidget* editor(const QString& key) const;
  QLabel* errorLabel(const QString& key) const;
  void setFieldText(const QString& key, const QString& text);
  QString fieldText(const QString& key) const;

 Q_SIGNALS:
  void specChanged();
  void validityChanged(bool valid);
  // A preset was loaded or saved, or failed to: one line for the status bar.
  void message(const QString& text);

 public Q_SLOTS:
  void loadPresetDialog();
  void savePresetDialog();

 private:
  FieldRow* makeRow(const QString& key, const QString& help);
  FieldRow* row(const QString& key) const;
  void revalidate();
  void updateHints();

  QList<FieldRow*> rows_;
  RunSpec spec_;
  QMap<QString, QString> errors_;
  QSet<QString> pending_;  // errors_ keys that are an awaited answer, not a problem
  bool valid_ = false;
  bool filling_ = false;
  ProbeResult probe_;
  QLabel* batchLabel_ = nullptr;
  QToolButton* presetButton_ = nullptr;
  QToolButton* advancedToggle_ = nullptr;
  QFormLayout* basic_ = nullptr;
  LauncherSection* launcher_ = nullptr;
  UserTaskSection* userTask_ = nullptr;
  ScriptSection* script_ = nullptr;
};

}  // namespace ddpdesk

// LaunchCommandPanel: under the run form, the cluster command line for what the form says, kept
// current as it changes (torchrun), and "Copy launch command" for the torchrun or Slurm srun
// line (launch_command.h), also reachable from the Run menu. While a field is invalid there is no
// command (the box says so, the button is disabled, the menu's copy says why).
#pragma once

#include <QWidget>

class QPlainTextEdit;
class QToolButton;

namespace ddpdesk {

class RunSpecForm;

class LaunchCommandPanel : public QWidget {
  Q_OBJECT
 public:
  LaunchCommandPanel(RunSpecForm* form, QWidget* parent = nullptr);

  void copyTorchrunCommand();
  void copySrunCommand();

 Q_SIGNALS:
  void message(const QString& text);  // "Copied: ..."

 private:
  void copy(const QString& command);
  bool ready() const;
  void refresh();

  RunSpecForm* form_;
  QPlainTextEdit* command_;
  QToolButton* copyButton_;
};

}  // namespace ddpdesk

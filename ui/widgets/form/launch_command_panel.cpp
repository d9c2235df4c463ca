#include "form/launch_command_panel.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QToolButton>
#include <QVBoxLayout>

#include "form/launch_command.h"
#include "form/run_spec_form.h"

namespace ddpdesk {

LaunchCommandPanel::LaunchCommandPanel(RunSpecForm* form, QWidget* parent)
    : QWidget(parent), form_(form) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->addWidget(new QLabel(tr("<b>On a cluster</b> (torchrun):"), this));
  command_ = new QPlainTextEdit(this);
  command_->setObjectName(QStringLiteral("launchCommand"));
  command_->setReadOnly(true);
  command_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  command_->setMaximumHeight(110);
  command_->setToolTip(
      tr("The torchrun command line that runs this configuration with ddpdesk-worker"));
  command_->setPlaceholderText(tr("No command while a field above is invalid"));
  v->addWidget(command_);
  copyButton_ = new QToolButton(this);
  auto* copy = copyButton_;
  copy->setText(tr("Copy launch command"));
  copy->setToolTip(tr("The command line that runs this configuration on a cluster"));
  copy->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(copy);
  menu->addAction(tr("torchrun"), this, &LaunchCommandPanel::copyTorchrunCommand);
  menu->addAction(tr("Slurm srun"), this, &LaunchCommandPanel::copySrunCommand);
  copy->setMenu(menu);
  v->addWidget(copy);
  connect(form_, &RunSpecForm::specChanged, this, &LaunchCommandPanel::refresh);
  connect(form_, &RunSpecForm::validityChanged, this, &LaunchCommandPanel::refresh);
  refresh();
}

bool LaunchCommandPanel::ready() const {
  // A form waiting only on the GPU probe or the task check has every field right.
  return form_->isValid() || form_->waitingOnly();
}

void LaunchCommandPanel::refresh() {
  // A field that does not parse keeps its last value in the spec: a command from it would run
  // something other than what the form shows.
  if (ready())
    command_->setPlainText(torchrunCommand(form_->spec()));
  else
    command_->clear();
  copyButton_->setEnabled(ready());
}

void LaunchCommandPanel::copyTorchrunCommand() {
  copy(torchrunCommand(form_->spec()));
}

void LaunchCommandPanel::copySrunCommand() {
  copy(srunCommand(form_->spec()));
}

void LaunchCommandPanel::copy(const QString& command) {
  if (!ready()) {  // the Run menu's entries stay enabled: say why nothing was copied
    const auto errors = form_->errors();
    Q_EMIT message(tr("No launch command: %1 %2").arg(errors.firstKey(), errors.first()));
    return;
  }
  QApplication::clipboard()->setText(command);
  Q_EMIT message(tr("Copied: %1").arg(command));
}

}  // namespace ddpdesk

#include "launch_command_panel.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QToolButton>
#include <QVBoxLayout>

#include "launch_command.h"
#include "run_form.h"

namespace ddpdesk {

LaunchCommandPanel::LaunchCommandPanel(RunForm* form, QWidget* parent)
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
  auto update = [this] { command_->setPlainText(torchrunCommand(form_->spec())); };
  connect(form_, &RunForm::specChanged, command_, update);
  update();
  v->addWidget(command_);
  auto* copy = new QToolButton(this);
  copy->setText(tr("Copy launch command"));
  copy->setToolTip(tr("The command line that runs this configuration on a cluster"));
  copy->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(copy);
  menu->addAction(tr("torchrun"), this, &LaunchCommandPanel::copyTorchrunCommand);
  menu->addAction(tr("Slurm srun"), this, &LaunchCommandPanel::copySrunCommand);
  copy->setMenu(menu);
  v->addWidget(copy);
}

void LaunchCommandPanel::copyTorchrunCommand() {
  copy(torchrunCommand(form_->spec()));
}

void LaunchCommandPanel::copySrunCommand() {
  copy(srunCommand(form_->spec()));
}

void LaunchCommandPanel::copy(const QString& command) {
  QApplication::clipboard()->setText(command);
  Q_EMIT message(tr("Copied: %1").arg(command));
}

}  // namespace ddpdesk

#include "form/slurm_preview_dialog.h"

#include <QApplication>
#include <QClipboard>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "run/monitor_settings.h"
#include "run/run_directory.h"
#include "slurm/login_resume.h"
#include "slurm/slurm_script.h"

namespace ddpdesk {

SlurmPreviewDialog::SlurmPreviewDialog(const RunSpec& given, const QString& worker, QWidget* parent)
    : QDialog(parent), spec_(given) {
  setWindowTitle(tr("Submit to Slurm"));
  setObjectName(QStringLiteral("slurm_preview"));
  // The directory the controller will use: a resumed run's own, the spec's, or a new one.
  const QString resume = QString::fromStdString(spec_.resume);
  if (spec_.run_dir.empty() && !resume.isEmpty() && QFileInfo(resume).isDir())
    spec_.run_dir = QFileInfo(resume).absoluteFilePath().toStdString();
  if (spec_.run_dir.empty())
    spec_.run_dir = RunDirectory::newRunPath(spec_, QDateTime::currentDateTime()).toStdString();
  const QString record = QFileInfo(QString::fromStdString(spec_.run_dir)).absoluteFilePath();
  spec_.run_dir = record.toStdString();
  // Through a login node the script goes into the directory on the cluster; a path from the home
  // directory there is made absolute by the login node itself when submitting.
  const bool viaLogin = spec_.is_slurm_via_login();
  if (viaLogin && spec_.slurm_remote_dir.empty())
    spec_.slurm_remote_dir =
        (QStringLiteral("~/ddpdesk-runs/") + QFileInfo(record).fileName()).toStdString();
  const QString runDir = viaLogin ? QString::fromStdString(spec_.slurm_remote_dir) : record;
  const QString login = QString::fromStdString(spec_.slurm_login);

  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      viaLogin
          ? tr("ddpdesk writes this script to <b>%1</b> on <b>%2</b> over ssh and submits it "
               "there with <tt>sbatch</tt>; the job's %3 rank(s) report through that directory "
               "and this machine keeps the run's record in %4.%5")
                .arg(slurmScriptPath(runDir).toHtmlEscaped(), login.toHtmlEscaped())
                .arg(spec_.world_size())
                .arg(record.toHtmlEscaped(),
                     runDir.startsWith(QLatin1Char('~'))
                         ? tr(" <i>~</i> is the home directory there; the submitted script "
                              "names it in full.")
                         : QString())
          : tr("ddpdesk writes this script to <b>%1</b> and submits it with <tt>sbatch</tt>; the "
               "job's %2 rank(s) report through the run directory.")
                .arg(slurmScriptPath(runDir).toHtmlEscaped())
                .arg(spec_.world_size()),
      this);
  intro->setWordWrap(true);
  layout->addWidget(intro);
  // The ranks' view: a resumed record, or a directory there named by --resume ssh://…, continues
  // from the checkpoints on the cluster.
  const QString workerResume = viaLogin ? loginWorkerResume(spec_, record, runDir) : resume;
  const QString there = viaLogin && !monitorSettings().remoteWorker.isEmpty()
                            ? monitorSettings().remoteWorker
                            : worker;
  text_ = new QPlainTextEdit(slurmBatchScript(spec_, runDir, there, workerResume), this);
  text_->setObjectName(QStringLiteral("slurm_script"));
  text_->setReadOnly(true);
  text_->setLineWrapMode(QPlainTextEdit::NoWrap);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text_->setMinimumSize(640, 240);
  layout->addWidget(text_);

  auto* buttons = new QDialogButtonBox(this);
  copy_ = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
  submit_ = buttons->addButton(tr("Submit"), QDialogButtonBox::AcceptRole);
  buttons->addButton(QDialogButtonBox::Cancel);
  submit_->setDefault(true);
  layout->addWidget(buttons);
  connect(copy_, &QPushButton::clicked, this,
          [this] { QApplication::clipboard()->setText(text_->toPlainText()); });
  connect(buttons, &QDialogButtonBox::accepted, this, [this] {
    accept();
    Q_EMIT submitRequested(spec_);
  });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
}

QString SlurmPreviewDialog::scriptText() const {
  return text_->toPlainText();
}

}  // namespace ddpdesk

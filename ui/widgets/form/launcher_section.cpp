#include "form/launcher_section.h"

#include <QFormLayout>
#include <QLabel>

#include "run_spec.h"

namespace ddpdesk {

LauncherSection::LauncherSection(QWidget* parent) : QGroupBox(tr("Launcher"), parent) {
  setObjectName(QStringLiteral("launcher_section"));
  form_ = new QFormLayout(this);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  note_ = new QLabel(
      tr("Start shows the batch script, then submits it with sbatch. The run directory and "
         "the worker must be on a file system every node sees."),
      this);
  note_->setObjectName(QStringLiteral("slurm_note"));
  note_->setWordWrap(true);
  note_->setStyleSheet(QStringLiteral("color: #666;"));
}

bool LauncherSection::holds(const QString& key) {
  return is_launcher_field(key.toStdString());
}

void LauncherSection::addRow(const QString& key, QLabel* label, QWidget* field) {
  form_->addRow(label, field);
  fields_.insert(key, field);
  if (key == QLatin1String("slurm_extra")) form_->addRow(note_);
}

void LauncherSection::showFor(bool slurm, bool slurmProblem) {
  slurmShown_ = slurm || slurmProblem;
  for (auto it = fields_.cbegin(); it != fields_.cend(); ++it)
    if (it.key() != QLatin1String("launcher")) form_->setRowVisible(it.value(), slurmShown_);
  form_->setRowVisible(note_, slurm);
}

}  // namespace ddpdesk

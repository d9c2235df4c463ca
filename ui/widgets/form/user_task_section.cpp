#include "form/user_task_section.h"

#include <QFormLayout>
#include <QLabel>

#include "form/field_row.h"
#include "form/task_check_gate.h"

namespace ddpdesk {
namespace {

bool isSpecField(const QString& key) {
  for (const FieldInfo& f : run_spec_fields())
    if (key == QLatin1String(f.key)) return true;
  return false;
}

}  // namespace

UserTaskSection::UserTaskSection(QWidget* parent)
    : QWidget(parent),
      form_(new QFormLayout(this)),
      gate_(new TaskCheckGate(this)),
      checkLabel_(new QLabel(this)) {
  form_->setContentsMargins(0, 0, 0, 0);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  connect(gate_, &TaskCheckGate::answered, this, &UserTaskSection::answered);
  checkLabel_->setObjectName(QStringLiteral("task_check"));
  checkLabel_->setWordWrap(true);
  checkLabel_->setTextFormat(Qt::RichText);
  checkLabel_->setStyleSheet(QStringLiteral("color: #2e6b30;"));
  form_->addRow(checkLabel_);
}

bool UserTaskSection::holds(const QString& key) {
  return is_user_task_field(key.toStdString());
}

void UserTaskSection::addRow(FieldRow* row) {
  form_->insertRow(form_->rowCount() - 1, row->label(), row);
  rows_.append(row);
  connect(row, &FieldRow::filePicked, gate_, &TaskCheckGate::recheck);
}

const TaskCheckResult& UserTaskSection::taskCheck() const {
  return gate_->result();
}

void UserTaskSection::applyTaskCheck(const RunSpec& s, QMap<QString, QString>& errors,
                                     QSet<QString>& pending) {
  bool checkable = needsTaskCheck(s);
  for (auto it = errors.cbegin(); it != errors.cend() && checkable; ++it)
    checkable = !isTaskCheckField(it.key().toStdString());
  const TaskCheckResult& check = gate_->update(s, checkable);
  if (!checkable) return;
  const QString model = QStringLiteral("model");
  switch (check.status) {
    case TaskCheckResult::Status::Pending:
      errors.insert(model, tr("checking the model and data (ddpdesk-worker --check)…"));
      pending.insert(model);
      break;
    case TaskCheckResult::Status::BadInput: {
      // On the field the worker named; one the form has no row for goes with the model.
      const QString key = isSpecField(check.field) ? check.field : model;
      errors.insert(key, check.fieldMessage());
      break;
    }
    case TaskCheckResult::Status::Failed:
      errors.insert(model, tr("could not check the model and data: %1").arg(check.error));
      break;
    case TaskCheckResult::Status::Ok:
      break;
  }
}

void UserTaskSection::showFor(const RunSpec& s, const QMap<QString, QString>& errors) {
  const TaskInfo* task = find_task(s.task);
  bool shown = task && task->user_files;
  // A problem in a hidden row must not be invisible (a preset with a bad loss, say).
  for (auto it = errors.cbegin(); it != errors.cend() && !shown; ++it) shown = holds(it.key());
  for (FieldRow* r : rows_) form_->setRowVisible(r, shown);
  const TaskCheckResult& check = gate_->result();
  const bool summary = shown && check.ok() && needsTaskCheck(s);
  form_->setRowVisible(checkLabel_, summary);
  // Nothing to show: no row (nor its spacing) in the form around this section.
  setVisible(shown);
  if (!summary) return;
  QString html = QStringLiteral("✓ ") + taskCheckSummary(check).toHtmlEscaped();
  for (const QString& w : check.warnings)
    html += QStringLiteral("<br><span style=\"color:#9a6700\">⚠ %1</span>").arg(w.toHtmlEscaped());
  checkLabel_->setText(html);
  QStringList out;
  for (qint64 d : check.outputShape) out << QString::number(d);
  checkLabel_->setToolTip(
      tr("ddpdesk-worker --check loaded the model and data and computed the %1 loss of one "
         "sample.\nOutput per sample: [%2]; %3 parameter tensors, %4 buffers%5.")
          .arg(check.loss, out.join(QLatin1Char(',')))
          .arg(check.parameterTensors)
          .arg(check.buffers)
          .arg(check.classification ? tr("; reports accuracy") : QString()));
}

}  // namespace ddpdesk

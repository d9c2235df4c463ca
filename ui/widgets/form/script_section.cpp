// The run form's Python-script rows (script_section.h).
#include "form/script_section.h"

#include <QFormLayout>
#include <QLabel>

#include "form/field_row.h"

namespace ddpdesk {

ScriptSection::ScriptSection(QWidget* parent)
    : QWidget(parent), form_(new QFormLayout(this)), hint_(new QLabel(this)) {
  form_->setContentsMargins(0, 0, 0, 0);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  QStringList names;
  for (const std::string& p : script_placeholders())
    names << QLatin1Char('{') + QString::fromStdString(p) + QLatin1Char('}');
  hint_->setObjectName(QStringLiteral("script_hint"));
  hint_->setWordWrap(true);
  hint_->setStyleSheet(QStringLiteral("color: #666;"));
  hint_->setText(tr("Every rank runs the script with torchrun's environment. In its arguments %1 "
                    "are filled from this form; they are also in DDPDESK_BATCH_SIZE, "
                    "DDPDESK_RUN_DIR, ….")
                     .arg(names.join(QLatin1Char(' '))));
  form_->addRow(hint_);
}

bool ScriptSection::holds(const QString& key) {
  return is_script_field(key.toStdString());
}

void ScriptSection::addRow(FieldRow* row) {
  form_->insertRow(form_->rowCount() - 1, row->label(), row);
  rows_.append(row);
}

void ScriptSection::showFor(const RunSpec& spec, const QMap<QString, QString>& errors) {
  const TaskInfo* task = find_task(spec.task);
  bool show = task && task->python_script;
  // A problem in a hidden row must not be invisible (a preset's bad arguments, say).
  for (const FieldRow* r : rows_) show = show || errors.contains(r->key());
  for (FieldRow* r : rows_) form_->setRowVisible(r, show);
  form_->setRowVisible(hint_, show);
  // Nothing to show: no row (nor its spacing) in the form around this section.
  setVisible(show);
}

}  // namespace ddpdesk

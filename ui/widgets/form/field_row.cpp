#include "form/field_row.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMap>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "run_spec.h"

namespace ddpdesk {
namespace {

// A 0/1 field of the spec: a checkbox.
bool isBooleanKey(const QString& key) {
  for (const FieldInfo& f : run_spec_fields())
    if (key == QLatin1String(f.key)) return f.boolean;
  return false;
}

// The choices of a field that has a fixed set of them (a combo box), empty for the others.
QStringList choicesFor(const QString& key) {
  QStringList out;
  if (key == QLatin1String("task"))
    for (const std::string& t : known_tasks()) out << QString::fromStdString(t);
  else if (key == QLatin1String("device"))
    out << QStringLiteral("cpu") << QStringLiteral("cuda");
  else if (key == QLatin1String("precision"))
    for (const std::string& p : known_precisions()) out << QString::fromStdString(p);
  else if (key == QLatin1String("launcher"))
    out << QStringLiteral("local") << QStringLiteral("slurm");
  else if (key == QLatin1String("loss"))
    for (const std::string& l : known_losses()) out << QString::fromStdString(l);
  return out;
}

// The file filter of a field naming a file to open (the user task's, the Python script and its
// interpreter); empty for other fields.
QString openFilter(const QString& key) {
  if (key == QLatin1String("model")) return QObject::tr("TorchScript (*.pt *.pth);;All files (*)");
  if (key == QLatin1String("train_data") || key == QLatin1String("eval_data"))
    return QObject::tr("Tensors (*.safetensors *.pt *.pth);;All files (*)");
  if (key == QLatin1String("script")) return QObject::tr("Python (*.py);;All files (*)");
  if (key == QLatin1String("python")) return QObject::tr("All files (*)");
  return {};
}

const QString kErrorStyle = QStringLiteral("color: #c0392b;");
const QString kWaitStyle = QStringLiteral("color: #666; font-style: italic;");

}  // namespace

QString FieldRow::labelFor(const QString& key) {
  static const QMap<QString, QString> labels = {
      {QStringLiteral("task"), QObject::tr("Task")},
      {QStringLiteral("device"), QObject::tr("Device")},
      {QStringLiteral("precision"), QObject::tr("Precision")},
      {QStringLiteral("nproc"), QObject::tr("Processes")},
      {QStringLiteral("batch_size"), QObject::tr("Batch size")},
      {QStringLiteral("accum_steps"), QObject::tr("Accumulation steps")},
      {QStringLiteral("fit_batch"), QObject::tr("Fit micro-batch to memory")},
      {QStringLiteral("cuda_graph"), QObject::tr("CUDA graphs")},
      {QStringLiteral("epochs"), QObject::tr("Epochs")},
      {QStringLiteral("lr"), QObject::tr("Learning rate")},
      {QStringLiteral("weight_decay"), QObject::tr("Weight decay")},
      {QStringLiteral("seed"), QObject::tr("Seed")},
      {QStringLiteral("dataset_size"), QObject::tr("Dataset size")},
      {QStringLiteral("log_interval"), QObject::tr("Log interval")},
      {QStringLiteral("name"), QObject::tr("Run name")},
      {QStringLiteral("on_end"), QObject::tr("Command at the end")},
      {QStringLiteral("run_dir"), QObject::tr("Run directory")},
      {QStringLiteral("resume"), QObject::tr("Resume from")},
      {QStringLiteral("metrics_file"), QObject::tr("Metrics file")},
      {QStringLiteral("checkpoint_every"), QObject::tr("Checkpoint every (steps)")},
      {QStringLiteral("checkpoint_minutes"), QObject::tr("Checkpoint every (min)")},
      {QStringLiteral("keep_checkpoints"), QObject::tr("Keep checkpoints")},
      {QStringLiteral("max_restarts"), QObject::tr("Restarts on failure")},
      {QStringLiteral("restart_backoff"), QObject::tr("Restart after (s)")},
      {QStringLiteral("collective_timeout"), QObject::tr("Collective timeout (s)")},
      {QStringLiteral("tensorboard"), QObject::tr("TensorBoard files")},
      {QStringLiteral("system_interval"), QObject::tr("System metrics every (s)")},
      {QStringLiteral("model"), QObject::tr("Model")},
      {QStringLiteral("train_data"), QObject::tr("Training data")},
      {QStringLiteral("eval_data"), QObject::tr("Validation data")},
      {QStringLiteral("loss"), QObject::tr("Loss")},
      {QStringLiteral("input_name"), QObject::tr("Input tensor")},
      {QStringLiteral("target_name"), QObject::tr("Target tensor")},
      {QStringLiteral("script"), QObject::tr("Script")},
      {QStringLiteral("script_args"), QObject::tr("Script arguments")},
      {QStringLiteral("python"), QObject::tr("Python")},
      {QStringLiteral("workdir"), QObject::tr("Working directory")},
      {QStringLiteral("loss_pattern"), QObject::tr("Printed loss pattern")},
      {QStringLiteral("logdir"), QObject::tr("TensorBoard log directory")},
      {QStringLiteral("launcher"), QObject::tr("Run on")},
      {QStringLiteral("slurm_nodes"), QObject::tr("Nodes")},
      {QStringLiteral("slurm_tasks_per_node"), QObject::tr("Ranks per node")},
      {QStringLiteral("slurm_partition"), QObject::tr("Partition")},
      {QStringLiteral("slurm_time"), QObject::tr("Time limit")},
      {QStringLiteral("slurm_account"), QObject::tr("Account")},
      {QStringLiteral("slurm_extra"), QObject::tr("More sbatch options")},
      {QStringLiteral("slurm_requeue"), QObject::tr("Requeue on node failure")},
      {QStringLiteral("slurm_login"), QObject::tr("Login node (ssh)")},
      {QStringLiteral("slurm_remote_dir"), QObject::tr("Run directory there")},
  };
  return labels.value(key, key);
}

FieldRow::FieldRow(const QString& key, const QString& help, QWidget* parent)
    : QWidget(parent), key_(key), label_(new QLabel(labelFor(key), parent)) {
  label_->setToolTip(help);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(1);
  line_ = new QHBoxLayout();
  line_->setSpacing(2);

  editor_ = makeEditor();
  editor_->setObjectName(key);
  editor_->setToolTip(help);
  if (line_->isEmpty()) line_->addWidget(editor_, 1);
  v->addLayout(line_);

  error_ = new QLabel(this);
  error_->setObjectName(key + QStringLiteral("_error"));
  error_->setStyleSheet(kErrorStyle);
  error_->setWordWrap(true);
  error_->setVisible(false);
  v->addWidget(error_);
  hint_ = new QLabel(this);
  hint_->setObjectName(key + QStringLiteral("_hint"));
  hint_->setStyleSheet(QStringLiteral("color: #666;"));
  hint_->setWordWrap(true);
  hint_->setVisible(false);
  v->addWidget(hint_);
}

QWidget* FieldRow::makeEditor() {
  const QString& key = key_;
  if (const QStringList choices = choicesFor(key); !choices.isEmpty()) {
    auto* combo = new QComboBox(this);
    combo->addItems(choices);
    if (key == QLatin1String("task"))
      for (int i = 0; i < int(task_catalog().size()); ++i)
        combo->setItemData(i, QString::fromUtf8(task_catalog()[i].description), Qt::ToolTipRole);
    connect(combo, &QComboBox::currentIndexChanged, this, &FieldRow::edited);
    return combo;
  }
  if (isBooleanKey(key)) {
    auto* check = new QCheckBox(this);
    connect(check, &QCheckBox::toggled, this, &FieldRow::edited);
    return check;
  }
  if (key == QLatin1String("nproc")) {
    // Wider than the RunSpec allows: limits are validation messages, not clamps, so a preset
    // asking for 0 ranks, or more GPUs than this machine has, says so instead of being changed.
    auto* spin = new QSpinBox(this);
    spin->setRange(0, 100000);
    connect(spin, &QSpinBox::valueChanged, this, &FieldRow::edited);
    return spin;
  }
  auto* edit = new QLineEdit(this);
  connect(edit, &QLineEdit::textChanged, this, &FieldRow::edited);
  const QString filter = openFilter(key);
  const bool dir = key == QLatin1String("run_dir") || key == QLatin1String("resume") ||
                   key == QLatin1String("workdir") || key == QLatin1String("logdir");
  const bool save = key == QLatin1String("metrics_file");
  if (dir || save || !filter.isEmpty()) {
    auto* browse = new QToolButton(this);
    browse->setText(QStringLiteral("…"));
    browse->setToolTip(tr("Choose…"));
    connect(browse, &QToolButton::clicked, this, [this, edit, key, filter, dir] {
      const QString label = labelFor(key);
      const QString chosen = !filter.isEmpty()
                                 ? QFileDialog::getOpenFileName(this, label, edit->text(), filter)
                             : dir ? QFileDialog::getExistingDirectory(this, label, edit->text())
                                   : QFileDialog::getSaveFileName(this, label, edit->text());
      if (chosen.isEmpty()) return;
      if (!filter.isEmpty()) Q_EMIT filePicked();
      if (edit->text() == chosen)
        Q_EMIT edited();
      else
        edit->setText(chosen);
    });
    line_->addWidget(edit, 1);
    line_->addWidget(browse);
  }
  if (key == QLatin1String("eval_data")) edit->setPlaceholderText(tr("optional: no validation"));
  return edit;
}

QString FieldRow::text() const {
  if (auto* c = qobject_cast<QComboBox*>(editor_)) return c->currentText();
  if (auto* s = qobject_cast<QSpinBox*>(editor_)) return QString::number(s->value());
  if (auto* e = qobject_cast<QLineEdit*>(editor_)) {
    // The task's default dataset size is shown as a placeholder naming it, never as a bare 0.
    if (key_ == QLatin1String("dataset_size") && e->text().trimmed().isEmpty())
      return QStringLiteral("0");
    return e->text();
  }
  if (auto* b = qobject_cast<QCheckBox*>(editor_))
    return b->isChecked() ? QStringLiteral("1") : QStringLiteral("0");
  return {};
}

void FieldRow::setText(const QString& text) {
  if (auto* c = qobject_cast<QComboBox*>(editor_)) {
    // A value the list does not offer (from a preset) is shown as is, with its error.
    if (c->findText(text) < 0) c->addItem(text);
    c->setCurrentText(text);
  } else if (auto* s = qobject_cast<QSpinBox*>(editor_)) {
    s->setValue(text.toInt());
  } else if (auto* e = qobject_cast<QLineEdit*>(editor_)) {
    e->setText(key_ == QLatin1String("dataset_size") && text == QLatin1String("0") ? QString()
                                                                                   : text);
  } else if (auto* b = qobject_cast<QCheckBox*>(editor_)) {
    b->setChecked(text == QLatin1String("1") || text == QLatin1String("true"));
  }
}

void FieldRow::showError(const QString& text, bool waiting) {
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
  const QString& style = waiting ? kWaitStyle : kErrorStyle;
  if (error_->styleSheet() != style) error_->setStyleSheet(style);
}

void FieldRow::showHint(const QString& text) {
  hint_->setText(text);
  hint_->setVisible(!text.isEmpty() && error_->isHidden());
}

}  // namespace ddpdesk

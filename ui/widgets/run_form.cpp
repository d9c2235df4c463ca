#include "run_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QSpinBox>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "launcher_section.h"
#include "spec_settings.h"
#include "task_check_gate.h"

namespace ddpdesk {
namespace {

// The fields a person sets for most runs; the rest go under "Advanced".
const QStringList& basicKeys() {
  static const QStringList keys = {
      QStringLiteral("task"),         QStringLiteral("device"),       QStringLiteral("nproc"),
      QStringLiteral("batch_size"),   QStringLiteral("accum_steps"),  QStringLiteral("epochs"),
      QStringLiteral("lr"),           QStringLiteral("weight_decay"), QStringLiteral("seed"),
      QStringLiteral("dataset_size"), QStringLiteral("log_interval"), QStringLiteral("name"),
      QStringLiteral("tensorboard")};
  return keys;
}

QString labelFor(const QString& key) {
  static const QMap<QString, QString> labels = {
      {QStringLiteral("task"), QObject::tr("Task")},
      {QStringLiteral("device"), QObject::tr("Device")},
      {QStringLiteral("nproc"), QObject::tr("Processes")},
      {QStringLiteral("batch_size"), QObject::tr("Batch size")},
      {QStringLiteral("accum_steps"), QObject::tr("Accumulation steps")},
      {QStringLiteral("epochs"), QObject::tr("Epochs")},
      {QStringLiteral("lr"), QObject::tr("Learning rate")},
      {QStringLiteral("weight_decay"), QObject::tr("Weight decay")},
      {QStringLiteral("seed"), QObject::tr("Seed")},
      {QStringLiteral("dataset_size"), QObject::tr("Dataset size")},
      {QStringLiteral("log_interval"), QObject::tr("Log interval")},
      {QStringLiteral("name"), QObject::tr("Run name")},
      {QStringLiteral("run_dir"), QObject::tr("Run directory")},
      {QStringLiteral("resume"), QObject::tr("Resume from")},
      {QStringLiteral("metrics_file"), QObject::tr("Metrics file")},
      {QStringLiteral("checkpoint_every"), QObject::tr("Checkpoint every")},
      {QStringLiteral("keep_checkpoints"), QObject::tr("Keep checkpoints")},
      {QStringLiteral("collective_timeout"), QObject::tr("Collective timeout (s)")},
      {QStringLiteral("tensorboard"), QObject::tr("TensorBoard files")},
      {QStringLiteral("system_interval"), QObject::tr("System metrics every (s)")},
      {QStringLiteral("model"), QObject::tr("Model")},
      {QStringLiteral("train_data"), QObject::tr("Training data")},
      {QStringLiteral("eval_data"), QObject::tr("Validation data")},
      {QStringLiteral("loss"), QObject::tr("Loss")},
      {QStringLiteral("input_name"), QObject::tr("Input tensor")},
      {QStringLiteral("target_name"), QObject::tr("Target tensor")},
      {QStringLiteral("launcher"), QObject::tr("Run on")},
      {QStringLiteral("slurm_nodes"), QObject::tr("Nodes")},
      {QStringLiteral("slurm_tasks_per_node"), QObject::tr("Ranks per node")},
      {QStringLiteral("slurm_partition"), QObject::tr("Partition")},
      {QStringLiteral("slurm_time"), QObject::tr("Time limit")},
      {QStringLiteral("slurm_account"), QObject::tr("Account")},
      {QStringLiteral("slurm_extra"), QObject::tr("More sbatch options")},
  };
  return labels.value(key, key);
}

// A 0/1 field of the spec: a checkbox.
bool isBooleanKey(const QString& key) {
  for (const FieldInfo& f : run_spec_fields())
    if (key == QLatin1String(f.key)) return f.boolean;
  return false;
}

bool isUserTaskKey(const QString& key) {
  return is_user_task_field(key.toStdString());
}

// Display order: the spec's field order, with the user task's rows right under the task (they
// are what a user task is about), then the rest.
QStringList displayOrder() {
  QStringList order;
  for (const FieldInfo& f : run_spec_fields()) {
    const QString key = QString::fromLatin1(f.key);
    if (isUserTaskKey(key)) continue;
    order << key;
    if (key == QLatin1String("task"))
      for (const FieldInfo& u : run_spec_fields())
        if (is_user_task_field(u.key)) order << QString::fromLatin1(u.key);
  }
  return order;
}

// The choices of a field that has a fixed set of them (a combo box), empty for the others.
QStringList choicesFor(const QString& key) {
  QStringList out;
  if (key == QLatin1String("task"))
    for (const std::string& t : known_tasks()) out << QString::fromStdString(t);
  else if (key == QLatin1String("device"))
    out << QStringLiteral("cpu") << QStringLiteral("cuda");
  else if (key == QLatin1String("launcher"))
    out << QStringLiteral("local") << QStringLiteral("slurm");
  else if (key == QLatin1String("loss"))
    for (const std::string& l : known_losses()) out << QString::fromStdString(l);
  return out;
}

// The file filter of a user-task file field; empty for other fields.
QString openFilter(const QString& key) {
  if (key == QLatin1String("model")) return QObject::tr("TorchScript (*.pt *.pth);;All files (*)");
  if (key == QLatin1String("train_data") || key == QLatin1String("eval_data"))
    return QObject::tr("Tensors (*.safetensors *.pt *.pth);;All files (*)");
  return {};
}

const QString kErrorStyle = QStringLiteral("color: #c0392b;");
const QString kWaitStyle = QStringLiteral("color: #666; font-style: italic;");

QString jsonText(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  return QString::fromStdString(v.dump());
}

}  // namespace

RunForm::RunForm(QWidget* parent) : QWidget(parent), gate_(new TaskCheckGate(this)) {
  connect(gate_, &TaskCheckGate::answered, this, [this] { revalidate(); });
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);

  presetButton_ = new QToolButton(this);
  presetButton_->setText(tr("Presets"));
  presetButton_->setPopupMode(QToolButton::InstantPopup);
  presetButton_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  auto* menu = new QMenu(presetButton_);
  for (const auto& [name, path] : builtinPresets()) {
    const QString p = path;
    menu->addAction(name, this, [this, p] { loadPresetFile(p); });
  }
  if (!menu->isEmpty()) menu->addSeparator();
  menu->addAction(tr("Load preset…"), this, &RunForm::loadPresetDialog);
  menu->addAction(tr("Save preset…"), this, &RunForm::savePresetDialog);
  presetButton_->setMenu(menu);
  auto* top = new QHBoxLayout();
  top->addWidget(new QLabel(QStringLiteral("<b>%1</b>").arg(tr("Run configuration")), this));
  top->addStretch(1);
  top->addWidget(presetButton_);
  outer->addLayout(top);

  launcher_ = new LauncherSection(this);
  auto* basic = basic_ = new QFormLayout();
  basic->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  auto* advancedBox = new QWidget(this);
  auto* advanced = new QFormLayout(advancedBox);
  advanced->setContentsMargins(0, 0, 0, 0);
  advanced->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  QMap<QString, QString> help;
  for (const FieldInfo& f : run_spec_fields())
    help.insert(QString::fromLatin1(f.key), QString::fromUtf8(f.help));
  const QStringList order = displayOrder();
  for (int i = 0; i < order.size(); ++i) {
    const QString& key = order[i];
    QWidget* field = makeRow(key, help.value(key));
    const bool user = isUserTaskKey(key);
    if (LauncherSection::holds(key))
      launcher_->addRow(key, rows_.back().label, field);
    else
      (basicKeys().contains(key) || user ? basic : advanced)->addRow(rows_.back().label, field);
    // The check's summary goes right under the last user-task row.
    if (user && (i + 1 == order.size() || !isUserTaskKey(order[i + 1]))) {
      checkLabel_ = new QLabel(this);
      checkLabel_->setObjectName(QStringLiteral("task_check"));
      checkLabel_->setWordWrap(true);
      checkLabel_->setTextFormat(Qt::RichText);
      checkLabel_->setStyleSheet(QStringLiteral("color: #2e6b30;"));
      basic->addRow(checkLabel_);
    }
  }
  outer->addLayout(basic);
  outer->addWidget(launcher_);

  batchLabel_ = new QLabel(this);
  batchLabel_->setToolTip(
      tr("Samples per optimizer step over all ranks: processes × batch size × accumulation "
         "steps"));
  outer->addWidget(batchLabel_);

  auto* toggle = advancedToggle_ = new QToolButton(this);
  toggle->setText(tr("Advanced"));
  toggle->setCheckable(true);
  toggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toggle->setArrowType(Qt::RightArrow);
  toggle->setAutoRaise(true);
  advancedBox->setVisible(false);
  connect(toggle, &QToolButton::toggled, this, [toggle, advancedBox](bool on) {
    toggle->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    advancedBox->setVisible(on);
  });
  outer->addWidget(toggle);
  outer->addWidget(advancedBox);
  outer->addStretch(1);

  setSpec(RunSpec());
}

QWidget* RunForm::makeRow(const QString& key, const QString& help) {
  Row r;
  r.key = key;
  r.label = new QLabel(labelFor(key), this);
  r.label->setToolTip(help);
  auto* box = new QWidget(this);
  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(1);
  auto* line = new QHBoxLayout();
  line->setSpacing(2);

  r.editor = makeEditor(key, box, line);
  r.editor->setObjectName(key);
  r.editor->setToolTip(help);
  if (line->isEmpty()) line->addWidget(r.editor, 1);
  v->addLayout(line);

  r.error = new QLabel(box);
  r.error->setObjectName(key + QStringLiteral("_error"));
  r.error->setStyleSheet(kErrorStyle);
  r.error->setWordWrap(true);
  r.error->setVisible(false);
  v->addWidget(r.error);
  r.hint = new QLabel(box);
  r.hint->setStyleSheet(QStringLiteral("color: #666;"));
  r.hint->setWordWrap(true);
  r.hint->setVisible(false);
  v->addWidget(r.hint);
  r.box = box;
  rows_.append(r);
  return box;
}

QWidget* RunForm::makeEditor(const QString& key, QWidget* box, QHBoxLayout* line) {
  if (const QStringList choices = choicesFor(key); !choices.isEmpty()) {
    auto* combo = new QComboBox(box);
    combo->addItems(choices);
    if (key == QLatin1String("task"))
      for (int i = 0; i < int(task_catalog().size()); ++i)
        combo->setItemData(i, QString::fromUtf8(task_catalog()[i].description), Qt::ToolTipRole);
    connect(combo, &QComboBox::currentIndexChanged, this, [this] { revalidate(); });
    return combo;
  }
  if (isBooleanKey(key)) {
    auto* check = new QCheckBox(box);
    connect(check, &QCheckBox::toggled, this, [this] { revalidate(); });
    return check;
  }
  if (key == QLatin1String("nproc")) {
    // Wider than the RunSpec allows: limits are validation messages, not clamps, so a preset
    // asking for 0 ranks, or more GPUs than this machine has, says so instead of being changed.
    auto* spin = new QSpinBox(box);
    spin->setRange(0, 100000);
    connect(spin, &QSpinBox::valueChanged, this, [this] { revalidate(); });
    return spin;
  }
  auto* edit = new QLineEdit(box);
  connect(edit, &QLineEdit::textChanged, this, [this] { revalidate(); });
  const QString filter = openFilter(key);
  const bool dir = key == QLatin1String("run_dir") || key == QLatin1String("resume");
  const bool save = key == QLatin1String("metrics_file");
  if (dir || save || !filter.isEmpty()) {
    auto* browse = new QToolButton(box);
    browse->setText(QStringLiteral("…"));
    browse->setToolTip(tr("Choose…"));
    connect(browse, &QToolButton::clicked, this, [this, edit, key, filter, dir] {
      const QString label = labelFor(key);
      const QString chosen = !filter.isEmpty()
                                 ? QFileDialog::getOpenFileName(this, label, edit->text(), filter)
                             : dir ? QFileDialog::getExistingDirectory(this, label, edit->text())
                                   : QFileDialog::getSaveFileName(this, label, edit->text());
      if (chosen.isEmpty()) return;
      // Picked again (fixed on disk since?): check again even when the path is the same.
      if (!filter.isEmpty()) gate_->recheck();
      if (edit->text() == chosen)
        revalidate();
      else
        edit->setText(chosen);
    });
    line->addWidget(edit, 1);
    line->addWidget(browse);
  }
  if (key == QLatin1String("eval_data")) edit->setPlaceholderText(tr("optional: no validation"));
  return edit;
}

const RunForm::Row* RunForm::row(const QString& key) const {
  for (const Row& r : rows_)
    if (r.key == key) return &r;
  return nullptr;
}

QWidget* RunForm::editor(const QString& key) const {
  const Row* r = row(key);
  return r ? r->editor : nullptr;
}

QLabel* RunForm::errorLabel(const QString& key) const {
  const Row* r = row(key);
  return r ? r->error : nullptr;
}

QString RunForm::fieldText(const QString& key) const {
  const Row* r = row(key);
  if (!r) return {};
  if (auto* c = qobject_cast<QComboBox*>(r->editor)) return c->currentText();
  if (auto* s = qobject_cast<QSpinBox*>(r->editor)) return QString::number(s->value());
  if (auto* e = qobject_cast<QLineEdit*>(r->editor)) {
    // The task's default dataset size is shown as a placeholder naming it, never as a bare 0.
    if (key == QLatin1String("dataset_size") && e->text().trimmed().isEmpty())
      return QStringLiteral("0");
    return e->text();
  }
  if (auto* b = qobject_cast<QCheckBox*>(r->editor))
    return b->isChecked() ? QStringLiteral("1") : QStringLiteral("0");
  return {};
}

void RunForm::setFieldText(const QString& key, const QString& text) {
  const Row* r = row(key);
  if (!r) return;
  if (auto* c = qobject_cast<QComboBox*>(r->editor)) {
    // A value the list does not offer (from a preset) is shown as is, with its error.
    if (c->findText(text) < 0) c->addItem(text);
    c->setCurrentText(text);
  } else if (auto* s = qobject_cast<QSpinBox*>(r->editor)) {
    s->setValue(text.toInt());
  } else if (auto* e = qobject_cast<QLineEdit*>(r->editor)) {
    e->setText(key == QLatin1String("dataset_size") && text == QLatin1String("0") ? QString()
                                                                                  : text);
  } else if (auto* b = qobject_cast<QCheckBox*>(r->editor)) {
    b->setChecked(text == QLatin1String("1") || text == QLatin1String("true"));
  }
}

void RunForm::setSpec(const RunSpec& spec) {
  const nlohmann::json j = to_json(spec);
  filling_ = true;
  for (const Row& r : rows_) {
    const std::string key = r.key.toStdString();
    if (j.contains(key)) setFieldText(r.key, jsonText(j[key]));
  }
  filling_ = false;
  revalidate();
}

void RunForm::setProbeResult(const ProbeResult& result) {
  probe_ = result;
  revalidate();
}

void RunForm::revalidate() {
  if (filling_) return;
  RunSpec s;
  QMap<QString, QString> errors;
  // Field by field, so a value that does not even convert is pinned to its own field.
  for (const Row& r : rows_) {
    nlohmann::json one = nlohmann::json::object();
    one[r.key.toStdString()] = fieldText(r.key).toStdString();
    for (const FieldError& e : apply_fields(one, s))
      errors.insert(QString::fromStdString(e.field), QString::fromStdString(e.allowed));
  }
  for (const FieldError& e : validate(s)) {
    const QString key = QString::fromStdString(e.field);
    if (!errors.contains(key)) errors.insert(key, QString::fromStdString(e.allowed));
  }
  pending_.clear();
  // The one rule only this machine knows: how many GPUs there are.
  // (A Slurm job's GPUs are on its nodes, not here.)
  if (s.device == "cuda" && !s.is_slurm() && !errors.contains(QStringLiteral("device"))) {
    if (probe_.status == ProbeResult::Status::Pending) {
      errors.insert(QStringLiteral("device"),
                    tr("waiting for ddpdesk-worker --probe to count GPUs"));
      pending_.insert(QStringLiteral("device"));
    } else if (probe_.status == ProbeResult::Status::Ok) {
      const int gpus = probe_.cudaAvailable ? probe_.deviceCount : 0;
      for (const FieldError& e : validate_gpus(s, s.nproc, gpus)) {
        const QString key = QString::fromStdString(e.field);
        if (!errors.contains(key)) errors.insert(key, QString::fromStdString(e.allowed));
      }
    }
  }
  // The one rule only the worker can tell: whether the user's files load and fit together.
  applyTaskCheck(s, errors);
  spec_ = s;
  errors_ = errors;
  bool advancedError = false;
  for (const Row& r : rows_) {
    const QString e = errors.value(r.key);
    r.error->setText(e);
    r.error->setVisible(!e.isEmpty());
    const QString& style = pending_.contains(r.key) ? kWaitStyle : kErrorStyle;
    if (r.error->styleSheet() != style) r.error->setStyleSheet(style);
    advancedError =
        advancedError || (!e.isEmpty() && !basicKeys().contains(r.key) && !isUserTaskKey(r.key));
  }
  // A problem in a collapsed section must not be invisible.
  if (advancedError) advancedToggle_->setChecked(true);
  showUserTaskRows(s);
  bool slurmProblem = false;
  for (auto it = errors.cbegin(); it != errors.cend(); ++it)
    slurmProblem = slurmProblem || (LauncherSection::holds(it.key()) && it.key() != "launcher");
  launcher_->showFor(s.is_slurm(), slurmProblem);
  // A Slurm job's ranks are its nodes × ranks per node; the local process count does not apply.
  if (const Row* r = row(QStringLiteral("nproc"))) basic_->setRowVisible(r->box, !s.is_slurm());
  updateHints();
  const bool batchOk =
      !errors.contains(QString::fromLatin1(s.is_slurm() ? "slurm_nodes" : "nproc")) &&
      !errors.contains(QStringLiteral("slurm_tasks_per_node")) &&
      !errors.contains(QStringLiteral("batch_size")) &&
      !errors.contains(QStringLiteral("accum_steps"));
  batchLabel_->setText(batchOk ? tr("Effective global batch: <b>%1</b>").arg(effectiveBatchText())
                               : tr("Effective global batch: —"));
  Q_EMIT specChanged();
  if (valid_ != isValid()) {
    valid_ = isValid();
    Q_EMIT validityChanged(valid_);
  }
}

void RunForm::applyTaskCheck(const RunSpec& s, QMap<QString, QString>& errors) {
  // Checked only once every field the check reads is fine by the shared rules (and the GPU
  // probe): until then those fields' own messages say what to fix.
  bool checkable = needsTaskCheck(s);
  for (auto it = errors.cbegin(); it != errors.cend() && checkable; ++it)
    checkable = !isTaskCheckField(it.key().toStdString());
  const TaskCheckResult& check = gate_->update(s, checkable);
  if (!checkable) return;
  const QString model = QStringLiteral("model");
  switch (check.status) {
    case TaskCheckResult::Status::Pending:
      errors.insert(model, tr("checking the model and data (ddpdesk-worker --check)…"));
      pending_.insert(model);
      break;
    case TaskCheckResult::Status::BadInput: {
      // On the field the worker named; one the form has no row for goes with the model.
      const QString key = row(check.field) ? check.field : model;
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

void RunForm::showUserTaskRows(const RunSpec& s) {
  const TaskInfo* task = find_task(s.task);
  bool shown = task && task->user_files;
  // A problem in a hidden row must not be invisible (a preset with a bad loss, say).
  for (auto it = errors_.cbegin(); it != errors_.cend() && !shown; ++it)
    shown = isUserTaskKey(it.key());
  for (const Row& r : rows_)
    if (isUserTaskKey(r.key)) basic_->setRowVisible(r.box, shown);
  const TaskCheckResult& check = gate_->result();
  const bool summary = shown && check.ok() && needsTaskCheck(s);
  basic_->setRowVisible(checkLabel_, summary);
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

bool RunForm::isFieldShown(const QString& key) const {
  const Row* r = row(key);
  return r && !r->box->isHidden();
}

bool RunForm::waitingOnly() const {
  if (errors_.isEmpty()) return false;
  for (auto it = errors_.cbegin(); it != errors_.cend(); ++it)
    if (!pending_.contains(it.key())) return false;
  return true;
}

void RunForm::setWorkerProgram(std::function<QString()> program) {
  gate_->setWorkerProgram(std::move(program));
}

void RunForm::setTaskCheckDelay(int ms) {
  gate_->setDelay(ms);
}

const TaskCheckResult& RunForm::taskCheck() const {
  return gate_->result();
}

QString RunForm::effectiveBatchText() const {
  return QStringLiteral("%1 × %2 × %3 = %4")
      .arg(spec_.world_size())
      .arg(spec_.batch_size)
      .arg(spec_.accum_steps)
      .arg(spec_.effective_batch());
}

void RunForm::updateHints() {
  const bool cuda = spec_.device == "cuda";
  if (const Row* r = row(QStringLiteral("nproc")))
    r->label->setText(cuda ? tr("GPUs") : tr("Processes"));
  auto hint = [this](const QString& key, const QString& text) {
    if (const Row* r = row(key)) {
      r->hint->setText(text);
      r->hint->setVisible(!text.isEmpty() && !errors_.contains(key));
    }
  };
  QString device;
  if (cuda) {
    if (probe_.status == ProbeResult::Status::Ok && probe_.deviceCount > 0)
      device = tr("%n GPU(s): %1", nullptr, probe_.deviceCount)
                   .arg(probe_.deviceNames.join(QStringLiteral(", ")));
    else if (probe_.status == ProbeResult::Status::Failed)
      device = tr("could not count GPUs: %1").arg(probe_.error);
  }
  hint(QStringLiteral("device"), device);
  if (const Row* r = row(QStringLiteral("dataset_size")))
    if (auto* e = qobject_cast<QLineEdit*>(r->editor)) e->setPlaceholderText(datasetDefaultText());
  const int cores = QThread::idealThreadCount();
  hint(QStringLiteral("nproc"),
       !cuda && spec_.nproc > cores
           ? tr("more ranks than this machine's %1 cores: they will share them").arg(cores)
           : QString());
}

QString RunForm::datasetDefaultText() const {
  if (spec_.task == "script") return tr("every sample of the data file (task default)");
  RunSpec defaults;
  defaults.task = spec_.task;
  const std::int64_t n = defaults.resolved_dataset_size();
  return find_task(spec_.task) ? tr("%1 (task default)").arg(QLocale().toString(qlonglong(n)))
                               : QString();
}

QStringList RunForm::loadPresetFile(const QString& path) {
  const PresetLoad p = loadPreset(path);
  if (p.readable) setSpec(p.spec);
  Q_EMIT message(p.problems.isEmpty()
                     ? tr("Loaded preset %1").arg(path)
                     : tr("Preset %1: %2").arg(path, p.problems.join(QStringLiteral("; "))));
  return p.problems;
}

bool RunForm::savePresetFile(const QString& path, QString* error) {
  QString err;
  const bool ok = savePreset(spec_, path, &err);
  if (error) *error = err;
  Q_EMIT message(ok ? tr("Saved preset %1").arg(path) : err);
  return ok;
}

void RunForm::loadPresetDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Load preset"), QString(),
                                                    tr("Run spec (*.json);;All files (*)"));
  if (!path.isEmpty()) loadPresetFile(path);
}

void RunForm::savePresetDialog() {
  QString path =
      QFileDialog::getSaveFileName(this, tr("Save preset"), QString(), tr("Run spec (*.json)"));
  if (path.isEmpty()) return;
  if (!path.endsWith(QLatin1String(".json"))) path += QStringLiteral(".json");
  savePresetFile(path);
}

}  // namespace ddpdesk

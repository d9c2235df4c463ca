#include "form/run_spec_form.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>
#include <nlohmann/json.hpp>

#include "form/field_row.h"
#include "form/launcher_section.h"
#include "form/script_section.h"
#include "form/spec_settings.h"
#include "form/task_check_gate.h"
#include "form/user_task_section.h"

namespace ddpdesk {
namespace {

// The fields a person sets for most runs; the rest go under "Advanced".
const QStringList& basicKeys() {
  static const QStringList keys = {
      QStringLiteral("task"),   QStringLiteral("device"),       QStringLiteral("precision"),
      QStringLiteral("nproc"),  QStringLiteral("batch_size"),   QStringLiteral("accum_steps"),
      QStringLiteral("epochs"), QStringLiteral("lr"),           QStringLiteral("weight_decay"),
      QStringLiteral("seed"),   QStringLiteral("dataset_size"), QStringLiteral("log_interval"),
      QStringLiteral("name"),   QStringLiteral("tensorboard")};
  return keys;
}

// Display order: the spec's field order, with the user task's and the script's rows right under
// the task (they are what such a task is about), then the rest.
QStringList displayOrder() {
  QStringList order;
  for (const FieldInfo& f : run_spec_fields()) {
    const QString key = QString::fromLatin1(f.key);
    if (UserTaskSection::holds(key) || ScriptSection::holds(key)) continue;
    order << key;
    if (key == QLatin1String("task"))
      for (const FieldInfo& u : run_spec_fields())
        if (is_user_task_field(u.key) || is_script_field(u.key))
          order << QString::fromLatin1(u.key);
  }
  return order;
}

QString jsonText(const nlohmann::json& v) {
  return QString::fromStdString(field_value_text(v));
}

}  // namespace

RunSpecForm::RunSpecForm(QWidget* parent)
    : QWidget(parent), userTask_(new UserTaskSection(this)), script_(new ScriptSection(this)) {
  connect(userTask_, &UserTaskSection::answered, this, [this] { revalidate(); });
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
  menu->addAction(tr("Load preset…"), this, &RunSpecForm::loadPresetDialog);
  menu->addAction(tr("Save preset…"), this, &RunSpecForm::savePresetDialog);
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
  for (const QString& key : displayOrder()) {
    FieldRow* row = makeRow(key, help.value(key));
    if (LauncherSection::holds(key))
      launcher_->addRow(key, row->label(), row);
    else if (UserTaskSection::holds(key))
      userTask_->addRow(row);
    else if (ScriptSection::holds(key))
      script_->addRow(row);
    else
      (basicKeys().contains(key) ? basic : advanced)->addRow(row->label(), row);
    // The user task's rows sit right under the task (they are what a user task is about).
    if (key == QLatin1String("task")) {
      basic->addRow(userTask_);
      basic->addRow(script_);
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

FieldRow* RunSpecForm::makeRow(const QString& key, const QString& help) {
  auto* row = new FieldRow(key, help, this);
  connect(row, &FieldRow::edited, this, [this] { revalidate(); });
  rows_.append(row);
  return row;
}

FieldRow* RunSpecForm::row(const QString& key) const {
  for (FieldRow* r : rows_)
    if (r->key() == key) return r;
  return nullptr;
}

QWidget* RunSpecForm::editor(const QString& key) const {
  const FieldRow* r = row(key);
  return r ? r->editor() : nullptr;
}

QLabel* RunSpecForm::errorLabel(const QString& key) const {
  const FieldRow* r = row(key);
  return r ? r->error() : nullptr;
}

QString RunSpecForm::fieldText(const QString& key) const {
  const FieldRow* r = row(key);
  return r ? r->text() : QString();
}

void RunSpecForm::setFieldText(const QString& key, const QString& text) {
  if (FieldRow* r = row(key)) r->setText(text);
}

void RunSpecForm::setSpec(const RunSpec& spec) {
  const nlohmann::json j = to_json(spec);
  filling_ = true;
  for (FieldRow* r : rows_) {
    const std::string key = r->key().toStdString();
    if (j.contains(key)) r->setText(jsonText(j[key]));
  }
  filling_ = false;
  revalidate();
}

void RunSpecForm::setProbeResult(const ProbeResult& result) {
  probe_ = result;
  revalidate();
}

void RunSpecForm::revalidate() {
  if (filling_) return;
  RunSpec s;
  QMap<QString, QString> errors;
  // Field by field, so a value that does not even convert is pinned to its own field.
  for (const FieldRow* r : rows_) {
    nlohmann::json one = nlohmann::json::object();
    one[r->key().toStdString()] = r->text().toStdString();
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
      for (const FieldError& e : cudaErrors(s, s.nproc, probe_)) {
        const QString key = QString::fromStdString(e.field);
        if (!errors.contains(key)) errors.insert(key, QString::fromStdString(e.allowed));
      }
    }
  }
  // The one rule only the worker can tell: whether the user's files load and fit together.
  userTask_->applyTaskCheck(s, errors, pending_);
  spec_ = s;
  errors_ = errors;
  bool advancedError = false;
  for (FieldRow* r : rows_) {
    const QString e = errors.value(r->key());
    r->showError(e, pending_.contains(r->key()));
    advancedError =
        advancedError || (!e.isEmpty() && !basicKeys().contains(r->key()) &&
                          !UserTaskSection::holds(r->key()) && !ScriptSection::holds(r->key()));
  }
  // A problem in a collapsed section must not be invisible.
  if (advancedError) advancedToggle_->setChecked(true);
  userTask_->showFor(s, errors_);
  script_->showFor(s, errors_);
  bool slurmProblem = false;
  for (auto it = errors.cbegin(); it != errors.cend(); ++it)
    slurmProblem = slurmProblem || (LauncherSection::holds(it.key()) && it.key() != "launcher");
  launcher_->showFor(s.is_slurm(), slurmProblem);
  // A Slurm job's ranks are its nodes × ranks per node; the local process count does not apply.
  if (FieldRow* r = row(QStringLiteral("nproc"))) basic_->setRowVisible(r, !s.is_slurm());
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

bool RunSpecForm::isFieldShown(const QString& key) const {
  const FieldRow* r = row(key);
  return r && !r->isHidden();
}

bool RunSpecForm::waitingOnly() const {
  if (errors_.isEmpty()) return false;
  for (auto it = errors_.cbegin(); it != errors_.cend(); ++it)
    if (!pending_.contains(it.key())) return false;
  return true;
}

void RunSpecForm::setWorkerProgram(std::function<QString()> program) {
  userTask_->gate()->setWorkerProgram(std::move(program));
}

void RunSpecForm::setTaskCheckDelay(int ms) {
  userTask_->gate()->setDelay(ms);
}

const TaskCheckResult& RunSpecForm::taskCheck() const {
  return userTask_->taskCheck();
}

QLabel* RunSpecForm::taskCheckLabel() const {
  return userTask_->checkLabel();
}

QString RunSpecForm::effectiveBatchText() const {
  return QStringLiteral("%1 × %2 × %3 = %4")
      .arg(spec_.world_size())
      .arg(spec_.batch_size)
      .arg(spec_.accum_steps)
      .arg(spec_.effective_batch());
}

void RunSpecForm::updateHints() {
  const bool cuda = spec_.device == "cuda";
  if (const FieldRow* r = row(QStringLiteral("nproc")))
    r->label()->setText(cuda ? tr("GPUs") : tr("Processes"));
  auto hint = [this](const QString& key, const QString& text) {
    if (FieldRow* r = row(key)) r->showHint(text);
  };
  // The GPUs a run of this spec would use (the driver's for a Python script, the worker's
  // LibTorch's for the others), or why there is none: under the field when cuda is chosen, and
  // on the Device list's cuda item.
  const QStringList gpus = describeDevices(probe_, spec_);
  QString device;
  if (cuda) {
    if (probe_.status == ProbeResult::Status::Ok && !gpus.isEmpty())
      device = tr("%n GPU(s): %1", nullptr, int(gpus.size())).arg(gpus.join(QStringLiteral(", ")));
    else if (probe_.status == ProbeResult::Status::Failed)
      device = tr("could not count GPUs: %1").arg(probe_.error);
  }
  hint(QStringLiteral("device"), device);
  if (const FieldRow* r = row(QStringLiteral("device")))
    if (auto* c = qobject_cast<QComboBox*>(r->editor()))
      if (const int i = c->findText(QStringLiteral("cuda")); i >= 0)
        c->setItemData(i,
                       gpus.isEmpty() ? noGpuReason(probe_, spec_) : gpus.join(QLatin1Char('\n')),
                       Qt::ToolTipRole);
  if (const FieldRow* r = row(QStringLiteral("dataset_size")))
    if (auto* e = qobject_cast<QLineEdit*>(r->editor()))
      e->setPlaceholderText(datasetDefaultText());
  // Restarts resume from checkpoints: the interval they bring when none is set.
  const RunSpec withRestarts = with_restart_checkpoints(spec_);
  const QString restartHint = withRestarts.checkpoint_minutes != spec_.checkpoint_minutes
                                  ? tr("restarts resume from checkpoints: one every %1 min "
                                       "unless set")
                                        .arg(kRestartCheckpointMinutes)
                                  : QString();
  hint(QStringLiteral("max_restarts"), spec_.max_restarts > 0 ? restartHint : QString());
  hint(QStringLiteral("slurm_requeue"), spec_.slurm_requeue ? restartHint : QString());
  // A training script gets no weight decay or log interval (they are no placeholders): greyed.
  const TaskInfo* task = find_task(spec_.task);
  const bool script = task && task->python_script;
  for (const QString& key : {QStringLiteral("weight_decay"), QStringLiteral("log_interval")})
    if (FieldRow* r = row(key)) {
      r->setEnabled(!script);
      r->label()->setEnabled(!script);
    }
  const int cores = QThread::idealThreadCount();
  hint(QStringLiteral("nproc"),
       !cuda && spec_.nproc > cores
           ? tr("more ranks than this machine's %1 cores: they will share them").arg(cores)
           : QString());
}

QString RunSpecForm::datasetDefaultText() const {
  if (spec_.task == "script") return tr("every sample of the data file (task default)");
  // A Python script reads its own data: the field reaches it only as DDPDESK_* if at all.
  if (const TaskInfo* t = find_task(spec_.task); t && t->python_script)
    return tr("the script's own data (not used)");
  RunSpec defaults;
  defaults.task = spec_.task;
  const std::int64_t n = defaults.resolved_dataset_size();
  return find_task(spec_.task) ? tr("%1 (task default)").arg(QLocale().toString(qlonglong(n)))
                               : QString();
}

QStringList RunSpecForm::loadPresetFile(const QString& path) {
  const PresetLoad p = loadPreset(path);
  if (p.readable) setSpec(p.spec);
  Q_EMIT message(p.problems.isEmpty()
                     ? tr("Loaded preset %1").arg(path)
                     : tr("Preset %1: %2").arg(path, p.problems.join(QStringLiteral("; "))));
  return p.problems;
}

bool RunSpecForm::savePresetFile(const QString& path, QString* error) {
  QString err;
  const bool ok = savePreset(spec_, path, &err);
  if (error) *error = err;
  Q_EMIT message(ok ? tr("Saved preset %1").arg(path) : err);
  return ok;
}

void RunSpecForm::loadPresetDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Load preset"), QString(),
                                                    tr("Run spec (*.json);;All files (*)"));
  if (!path.isEmpty()) loadPresetFile(path);
}

void RunSpecForm::savePresetDialog() {
  QString path =
      QFileDialog::getSaveFileName(this, tr("Save preset"), QString(), tr("Run spec (*.json)"));
  if (path.isEmpty()) return;
  if (!path.endsWith(QLatin1String(".json"))) path += QStringLiteral(".json");
  savePresetFile(path);
}

}  // namespace ddpdesk

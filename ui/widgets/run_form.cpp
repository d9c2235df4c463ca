#include "run_form.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSpinBox>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>
#include <nlohmann/json.hpp>

#include "spec_settings.h"

namespace ddpdesk {
namespace {

// The fields a person sets for most runs; the rest go under "Advanced".
const QStringList& basicKeys() {
  static const QStringList keys = {
      QStringLiteral("task"),         QStringLiteral("device"),       QStringLiteral("nproc"),
      QStringLiteral("batch_size"),   QStringLiteral("accum_steps"),  QStringLiteral("epochs"),
      QStringLiteral("lr"),           QStringLiteral("weight_decay"), QStringLiteral("seed"),
      QStringLiteral("dataset_size"), QStringLiteral("log_interval"), QStringLiteral("name")};
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
  };
  return labels.value(key, key);
}

QString jsonText(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  return QString::fromStdString(v.dump());
}

}  // namespace

RunForm::RunForm(QWidget* parent) : QWidget(parent) {
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

  auto* basic = new QFormLayout();
  basic->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  auto* advancedBox = new QWidget(this);
  auto* advanced = new QFormLayout(advancedBox);
  advanced->setContentsMargins(0, 0, 0, 0);
  advanced->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  for (const FieldInfo& f : run_spec_fields()) {
    const QString key = QString::fromLatin1(f.key);
    QWidget* field = makeRow(key, QString::fromUtf8(f.help));
    (basicKeys().contains(key) ? basic : advanced)->addRow(rows_.back().label, field);
  }
  outer->addLayout(basic);

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

  if (key == QLatin1String("task") || key == QLatin1String("device")) {
    auto* combo = new QComboBox(box);
    if (key == QLatin1String("task")) {
      for (const std::string& t : known_tasks()) combo->addItem(QString::fromStdString(t));
    } else {
      combo->addItem(QStringLiteral("cpu"));
      combo->addItem(QStringLiteral("cuda"));
    }
    connect(combo, &QComboBox::currentIndexChanged, this, [this] { revalidate(); });
    r.editor = combo;
  } else if (key == QLatin1String("nproc")) {
    // Wider than the RunSpec allows: limits are validation messages, not clamps, so a preset
    // asking for 0 ranks, or more GPUs than this machine has, says so instead of being changed.
    auto* spin = new QSpinBox(box);
    spin->setRange(0, 100000);
    connect(spin, &QSpinBox::valueChanged, this, [this] { revalidate(); });
    r.editor = spin;
  } else {
    auto* edit = new QLineEdit(box);
    connect(edit, &QLineEdit::textChanged, this, [this] { revalidate(); });
    r.editor = edit;
    const bool path = key == QLatin1String("run_dir") || key == QLatin1String("resume") ||
                      key == QLatin1String("metrics_file");
    if (path) {
      auto* browse = new QToolButton(box);
      browse->setText(QStringLiteral("…"));
      browse->setToolTip(tr("Choose…"));
      connect(browse, &QToolButton::clicked, this, [this, edit, key] {
        const QString chosen =
            key == QLatin1String("metrics_file")
                ? QFileDialog::getSaveFileName(this, labelFor(key), edit->text())
                : QFileDialog::getExistingDirectory(this, labelFor(key), edit->text());
        if (!chosen.isEmpty()) edit->setText(chosen);
      });
      line->addWidget(edit, 1);
      line->addWidget(browse);
    }
    if (key == QLatin1String("dataset_size")) edit->setPlaceholderText(tr("0 = task default"));
  }
  r.editor->setObjectName(key);
  r.editor->setToolTip(help);
  if (line->isEmpty()) line->addWidget(r.editor, 1);
  v->addLayout(line);

  r.error = new QLabel(box);
  r.error->setObjectName(key + QStringLiteral("_error"));
  r.error->setStyleSheet(QStringLiteral("color: #c0392b;"));
  r.error->setWordWrap(true);
  r.error->setVisible(false);
  v->addWidget(r.error);
  r.hint = new QLabel(box);
  r.hint->setStyleSheet(QStringLiteral("color: #666;"));
  r.hint->setWordWrap(true);
  r.hint->setVisible(false);
  v->addWidget(r.hint);
  rows_.append(r);
  return box;
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
  if (auto* e = qobject_cast<QLineEdit*>(r->editor)) return e->text();
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
    e->setText(text);
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
  // The one rule only this machine knows: how many GPUs there are.
  if (s.device == "cuda" && !errors.contains(QStringLiteral("device"))) {
    if (probe_.status == ProbeResult::Status::Pending)
      errors.insert(QStringLiteral("device"),
                    tr("waiting for ddpdesk-worker --probe to count GPUs"));
    else if (probe_.status == ProbeResult::Status::Ok && probe_.deviceCount == 0)
      errors.insert(QStringLiteral("device"),
                    tr("no CUDA device on this machine (ddpdesk-worker --probe found none)"));
    else if (probe_.status == ProbeResult::Status::Ok && s.nproc > probe_.deviceCount &&
             !errors.contains(QStringLiteral("nproc")))
      errors.insert(QStringLiteral("nproc"),
                    tr("must be at most %1: one rank per GPU, and this machine has %1")
                        .arg(probe_.deviceCount));
  }
  spec_ = s;
  errors_ = errors;
  bool advancedError = false;
  for (const Row& r : rows_) {
    const QString e = errors.value(r.key);
    r.error->setText(e);
    r.error->setVisible(!e.isEmpty());
    advancedError = advancedError || (!e.isEmpty() && !basicKeys().contains(r.key));
  }
  // A problem in a collapsed section must not be invisible.
  if (advancedError) advancedToggle_->setChecked(true);
  updateHints();
  const bool batchOk = !errors.contains(QStringLiteral("nproc")) &&
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

QString RunForm::effectiveBatchText() const {
  return QStringLiteral("%1 × %2 × %3 = %4")
      .arg(spec_.nproc)
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
  const int cores = QThread::idealThreadCount();
  hint(QStringLiteral("nproc"),
       !cuda && spec_.nproc > cores
           ? tr("more ranks than this machine's %1 cores: they will share them").arg(cores)
           : QString());
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

#include "queue/sweep_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>

namespace ddpdesk {
namespace {

// "1, 2, 4" or "1e-3 3e-4": numbers as JSON numbers; anything else stays text, so the sweep's
// own check names it.
nlohmann::json parseValues(const QString& text) {
  nlohmann::json list = nlohmann::json::array();
  for (const QString& token :
       text.split(QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts)) {
    const nlohmann::json v = nlohmann::json::parse(token.toStdString(), nullptr, false);
    list.push_back(!v.is_discarded() && v.is_number() ? v : nlohmann::json(token.toStdString()));
  }
  return list;
}

}  // namespace

SweepDialog::SweepDialog(const RunSpec& base, QWidget* parent) : QDialog(parent), base_(base) {
  setWindowTitle(tr("Sweep"));
  // Each run gets its own directory and name from the sweep.
  base_.run_dir.clear();
  base_.resume.clear();
  base_.name.clear();

  auto* form = new QFormLayout;
  name_ = new QLineEdit(QStringLiteral("sweep"), this);
  form->addRow(tr("Name"), name_);
  for (int r = 0; r < kRows; ++r) {
    auto* field = new QComboBox(this);
    field->addItem(tr("(none)"), QString());
    for (const FieldInfo& f : run_spec_fields())
      if (f.numeric) field->addItem(QString::fromLatin1(f.key), QString::fromLatin1(f.key));
    auto* values = new QLineEdit(this);
    values->setPlaceholderText(tr("values, e.g. 1, 2, 4"));
    auto* row = new QHBoxLayout;
    row->addWidget(field);
    row->addWidget(values, 1);
    form->addRow(tr("Field %1").arg(r + 1), row);
    fields_.push_back(field);
    values_.push_back(values);
    connect(field, &QComboBox::currentIndexChanged, this, &SweepDialog::update);
    connect(values, &QLineEdit::textChanged, this, &SweepDialog::update);
  }
  keep_ = new QCheckBox(tr("Keep the effective batch at"), this);
  effective_ = new QSpinBox(this);
  effective_->setRange(1, 1000000000);
  effective_->setValue(int(std::min<std::int64_t>(base_.effective_batch(), 1000000000)));
  derive_ = new QComboBox(this);
  derive_->addItem(tr("by deriving batch_size"), QStringLiteral("batch_size"));
  derive_->addItem(tr("by deriving accum_steps"), QStringLiteral("accum_steps"));
  auto* keepRow = new QHBoxLayout;
  keepRow->addWidget(keep_);
  keepRow->addWidget(effective_);
  keepRow->addWidget(derive_, 1);
  form->addRow(tr("Effective batch"), keepRow);
  stopOnFailure_ = new QCheckBox(tr("A failed run stops the queue"), this);
  form->addRow(QString(), stopOnFailure_);

  preview_ = new QPlainTextEdit(this);
  preview_->setReadOnly(true);
  preview_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons_->button(QDialogButtonBox::Ok)->setText(tr("Queue runs"));
  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addWidget(preview_, 1);
  v->addWidget(buttons_);
  connect(name_, &QLineEdit::textChanged, this, &SweepDialog::update);
  connect(keep_, &QCheckBox::toggled, this, &SweepDialog::update);
  connect(effective_, &QSpinBox::valueChanged, this, &SweepDialog::update);
  connect(derive_, &QComboBox::currentIndexChanged, this, &SweepDialog::update);
  connect(stopOnFailure_, &QCheckBox::toggled, this, &SweepDialog::update);
  resize(560, 480);
  update();
}

void SweepDialog::setRow(int row, const QString& field, const QString& values) {
  const int i = fields_[row]->findData(field);
  fields_[row]->setCurrentIndex(i < 0 ? 0 : i);
  values_[row]->setText(values);
}

void SweepDialog::setName(const QString& name) {
  name_->setText(name);
}

void SweepDialog::setEffectiveBatch(qint64 effective, const QString& derive) {
  keep_->setChecked(effective > 0);
  if (effective > 0) effective_->setValue(int(effective));
  derive_->setCurrentIndex(derive_->findData(derive));
}

void SweepDialog::setStopOnFailure(bool stop) {
  stopOnFailure_->setChecked(stop);
}

QByteArray SweepDialog::definition() const {
  nlohmann::ordered_json def;
  def["name"] = name_->text().toStdString();
  nlohmann::json base = to_json(base_);
  for (const char* own : {"run_dir", "resume", "name"}) base.erase(own);
  def["base"] = nlohmann::ordered_json::parse(base.dump());
  def["grid"] = nlohmann::ordered_json::object();
  for (int r = 0; r < kRows; ++r) {
    const QString field = fields_[r]->currentData().toString();
    if (!field.isEmpty())
      def["grid"][field.toStdString()] =
          nlohmann::ordered_json::parse(parseValues(values_[r]->text()).dump());
  }
  if (keep_->isChecked()) {
    def["effective_batch"] = effective_->value();
    def["derive"] = derive_->currentData().toString().toStdString();
  }
  def["stop_on_failure"] = stopOnFailure_->isChecked();
  return QByteArray::fromStdString(def.dump(2));
}

QString SweepDialog::preview() const {
  return preview_->toPlainText();
}

bool SweepDialog::canAccept() const {
  return buttons_->button(QDialogButtonBox::Ok)->isEnabled();
}

void SweepDialog::update() {
  plan_ = parse_sweep(definition().toStdString());
  QStringList lines;
  bool anyField = false;
  for (int r = 0; r < kRows; ++r) anyField |= !fields_[r]->currentData().toString().isEmpty();
  if (!anyField) {
    // Nothing chosen yet is not a mistake: say what to do, not what is wrong.
    lines << tr("Choose a field to sweep and its values, e.g. lr: 0.001, 0.0003.");
  } else if (!plan_.ok()) {
    lines << QString::fromStdString(plan_.error);
  } else {
    lines << tr("%n run(s):", nullptr, int(plan_.runs.size()));
    for (std::size_t i = 0; i < plan_.runs.size(); ++i) {
      QStringList parts;
      const auto& fields = plan_.runs[i].fields;
      for (auto it = fields.begin(); it != fields.end(); ++it)
        parts << QString::fromStdString(it.key() + "=" + it.value().dump());
      lines << QStringLiteral("  %1. %2  (effective batch %3)")
                   .arg(i + 1)
                   .arg(parts.join(QStringLiteral(", ")))
                   .arg(plan_.runs[i].spec.effective_batch());
    }
    for (const SweepSkip& s : plan_.skipped)
      lines << tr("skipped %1: %2")
                   .arg(QString::fromStdString(s.fields.dump()), QString::fromStdString(s.reason));
  }
  preview_->setPlainText(lines.join('\n'));
  buttons_->button(QDialogButtonBox::Ok)->setEnabled(plan_.ok());
}

}  // namespace ddpdesk

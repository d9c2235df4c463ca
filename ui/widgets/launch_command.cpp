#include "launch_command.h"

#include <QRegularExpression>
#include <nlohmann/json.hpp>

namespace ddpdesk {
namespace {

// Shown even at their defaults: what a reader of the command needs to know about the run.
bool alwaysShown(const std::string& key) {
  return key == "task" || key == "device" || key == "batch_size" || key == "accum_steps" ||
         key == "epochs" || key == "lr" || key == "seed";
}

QString valueText(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  return QString::fromStdString(v.dump());
}

}  // namespace

QString shellQuote(const QString& word) {
  static const QRegularExpression safe(QStringLiteral("^[A-Za-z0-9_./:=+@%,-]+$"));
  if (safe.match(word).hasMatch()) return word;
  QString q = word;
  q.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
  return QLatin1Char('\'') + q + QLatin1Char('\'');
}

QStringList workerArguments(const RunSpec& spec) {
  const nlohmann::json given = to_json(spec);
  const nlohmann::json defaults = to_json(RunSpec());
  QStringList args;
  for (const auto& f : run_spec_fields()) {
    const std::string key = f.key;
    if (key == "nproc") continue;
    if (!alwaysShown(key) && given[key] == defaults[key]) continue;
    args << QString::fromStdString(field_label(key, Spelling::Flag));
    args << shellQuote(valueText(given[key]));
  }
  return args;
}

QString torchrunCommand(const RunSpec& spec, const QString& worker) {
  QStringList words = {
      QStringLiteral("torchrun"), QStringLiteral("--no-python"),      QStringLiteral("--nnodes"),
      QStringLiteral("1"),        QStringLiteral("--nproc-per-node"), QString::number(spec.nproc),
      shellQuote(worker)};
  return (words + workerArguments(spec)).join(QLatin1Char(' '));
}

QString srunCommand(const RunSpec& spec, const QString& worker) {
  QStringList words = {QStringLiteral("MASTER_ADDR=127.0.0.1"),
                       QStringLiteral("MASTER_PORT=29500"),
                       QStringLiteral("srun"),
                       QStringLiteral("--nodes"),
                       QStringLiteral("1"),
                       QStringLiteral("--ntasks"),
                       QString::number(spec.nproc)};
  if (spec.device == "cuda") words << QStringLiteral("--gres=gpu:%1").arg(spec.nproc);
  words << shellQuote(worker);
  return (words + workerArguments(spec)).join(QLatin1Char(' '));
}

}  // namespace ddpdesk

#include "form/spec_settings.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <nlohmann/json.hpp>

#include "run/atomic_file.h"
#include "window/resources.h"

namespace ddpdesk {
namespace {

constexpr const char* kLastSpecKey = "form/lastSpec";

// Applies what it can of a JSON text onto defaults.
PresetLoad applyText(const QByteArray& text) {
  PresetLoad r;
  const nlohmann::json j = nlohmann::json::parse(text.constData(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    r.problems << QStringLiteral("not a JSON object of run spec fields");
    return r;
  }
  r.readable = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    nlohmann::json one = nlohmann::json::object();
    one[it.key()] = it.value();
    for (const auto& e : apply_fields(one, r.spec))
      r.problems << QString::fromStdString(format_error(e, Spelling::JsonKey));
  }
  return r;
}

}  // namespace

PresetLoad loadPreset(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    PresetLoad r;
    r.problems << QStringLiteral("cannot read %1: %2").arg(path, f.errorString());
    return r;
  }
  return applyText(f.readAll());
}

bool savePreset(const RunSpec& spec, const QString& path, QString* error) {
  return writeFileAtomically(path, QByteArray::fromStdString(to_json_text(spec)) + '\n', error);
}

QList<QPair<QString, QString>> builtinPresets() {
  ensureResources();
  QList<QPair<QString, QString>> out;
  const QDir dir(QStringLiteral(":/presets"));
  for (const QFileInfo& fi : dir.entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name))
    out.append({fi.completeBaseName(), fi.filePath()});
  return out;
}

RunSpec newcomerSpec() {
  ensureResources();
  return loadPreset(QStringLiteral(":/presets/fmnist-mlp-2cpu.json")).spec;
}

std::optional<RunSpec> loadLastSpec() {
  const QByteArray text = QSettings().value(QLatin1String(kLastSpecKey)).toByteArray();
  if (text.isEmpty()) return std::nullopt;
  PresetLoad r = applyText(text);
  if (!r.readable) return std::nullopt;
  return r.spec;
}

RunSpec openingSpec() {
  return loadLastSpec().value_or(newcomerSpec());
}

void saveLastSpec(const RunSpec& spec) {
  RunSpec kept = spec;
  kept.resume.clear();  // a resume is a one-off action, not a setting to start with next time
  QSettings().setValue(QLatin1String(kLastSpecKey),
                       QByteArray::fromStdString(to_json_text(kept, -1)));
}

}  // namespace ddpdesk

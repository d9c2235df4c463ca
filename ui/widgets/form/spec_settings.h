// Run specs on disk for the GUI: presets (a RunSpec as JSON, the same file `--config` takes) and
// the last spec used, remembered between launches in QSettings.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

#include "run_spec.h"

namespace ddpdesk {

struct PresetLoad {
  RunSpec spec;           // defaults with every field the file could set applied
  QStringList problems;   // one line per field that could not be applied (or why nothing could)
  bool readable = false;  // the file was read and held a JSON object
};

// Reads a preset. Fields are applied onto defaults one by one, so a file with one bad field still
// fills the rest; values that convert but are out of range stay, for the form to show.
PresetLoad loadPreset(const QString& path);
bool savePreset(const RunSpec& spec, const QString& path, QString* error = nullptr);

// The presets shipped with the app (":/presets/*.json"), as (display name, resource path).
QList<QPair<QString, QString>> builtinPresets();

// The run a first launch opens on: the shipped two-process Fashion-MNIST MLP preset (a real data
// set, a few seconds an epoch, two ranks to compare), so Start shows something worth watching.
RunSpec newcomerSpec();

// The last spec the user started (or had in the form when the window closed), without `resume`.
std::optional<RunSpec> loadLastSpec();
void saveLastSpec(const RunSpec& spec);
// The spec the window opens on: the last one, else newcomerSpec().
RunSpec openingSpec();

}  // namespace ddpdesk

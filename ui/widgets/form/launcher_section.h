// LauncherSection: the run form's "Launcher" box — local processes or a Slurm job, and the
// Slurm job's fields (nodes, tasks per node, partition, time limit, account, extra sbatch
// options), shown only for Slurm (or while one of them holds a problem). The RunSpecForm builds the
// rows (one editor per RunSpec field, checked with the shared rules) and places the launcher's
// here; this box decides which are seen.
#pragma once

#include <QGroupBox>
#include <QMap>
#include <QString>

class QFormLayout;
class QLabel;

namespace ddpdesk {

class LauncherSection : public QGroupBox {
  Q_OBJECT
 public:
  explicit LauncherSection(QWidget* parent = nullptr);

  // Whether the RunSpecForm puts a field's row here (launcher, slurm_*).
  static bool holds(const QString& key);
  void addRow(const QString& key, QLabel* label, QWidget* field);
  // Shows the Slurm rows for launcher "slurm", or when `slurmProblem` (a bad value in a hidden
  // row must not be invisible).
  void showFor(bool slurm, bool slurmProblem);
  bool slurmRowsShown() const { return slurmShown_; }

 private:
  QFormLayout* form_;
  QMap<QString, QWidget*> fields_;
  QLabel* note_;
  bool slurmShown_ = true;
};

}  // namespace ddpdesk

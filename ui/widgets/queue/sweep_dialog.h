// "Sweep…": a grid around the run form's spec. Up to three numeric fields (from the RunSpec's
// field table) with their values, an optional constant effective batch (batch size or
// accumulation derived), and a live preview of the runs and skipped combinations, or of the one
// line that says what is wrong. The definition is the sweep file's format (sweep.h) and expands
// through the same code as `ddpdesk --headless --sweep`.
#pragma once

#include <QDialog>
#include <vector>

#include "sweep.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace ddpdesk {

class SweepDialog : public QDialog {
  Q_OBJECT
 public:
  explicit SweepDialog(const RunSpec& base, QWidget* parent = nullptr);

  static constexpr int kRows = 3;
  // Row `row` sweeps `field` over `values` ("1, 2, 4"); an empty field leaves the row unused.
  void setRow(int row, const QString& field, const QString& values);
  void setName(const QString& name);
  // effective > 0 keeps nproc x batch x accum at it, deriving `derive`; 0 switches it off.
  void setEffectiveBatch(qint64 effective, const QString& derive = QStringLiteral("batch_size"));
  void setStopOnFailure(bool stop);

  // The definition as the sweep file writes it, and what it expands to.
  QByteArray definition() const;
  const SweepPlan& plan() const { return plan_; }
  QString preview() const;
  bool canAccept() const;

 private:
  void update();

  RunSpec base_;
  QLineEdit* name_;
  std::vector<QComboBox*> fields_;
  std::vector<QLineEdit*> values_;
  QCheckBox* keep_;
  QSpinBox* effective_;
  QComboBox* derive_;
  QCheckBox* stopOnFailure_;
  QPlainTextEdit* preview_;
  QDialogButtonBox* buttons_;
  SweepPlan plan_;
  std::vector<std::string> order_;
};

}  // namespace ddpdesk

// The comparison window: runs from the history (and TensorBoard logs) side by side.
//
//   +--------------------------------------------------------------------------+
//   | x: [step v]  match: [interpolate v]  Add TensorBoard log…  Table CSV…  PNG… |
//   +------------------------------------+-------------------------------------+
//   | LossChart: every run's global loss | ThroughputChart: samples/s and      |
//   | and validation loss, overlaid      | validation accuracy, overlaid       |
//   +------------------------------------+-------------------------------------+
//   | Difference: [other v] − [reference v] [metric v]  max … at …, RMS …       |
//   | DifferenceChart: other − reference                                        |
//   +--------------------------------------------------------------------------+
//   | table: differing spec fields, global batch, final/best loss, accuracy, … |
//   +--------------------------------------------------------------------------+
//
// The numbers are the core's (run_comparison.h, curve_compare.h), the charts the live view's
// own classes; the window only loads, lays out and keeps the choices in step.
#pragma once

#include <QStringList>
#include <QWidget>
#include <functional>
#include <vector>

#include "compare/curve_compare.h"
#include "compare/run_comparison.h"

class QComboBox;
class QLabel;
class QTableView;

namespace ddpdesk {

class ComparisonLoader;
class ComparisonTableModel;
class DifferenceChart;
class LossChart;
class ThroughputChart;

class ComparisonWindow : public QWidget {
  Q_OBJECT
 public:
  explicit ComparisonWindow(QWidget* parent = nullptr);
  ~ComparisonWindow() override;

  // Reads the runs at `paths` without blocking; loaded() or message() follows.
  void load(const QStringList& paths);
  // Shows these runs (in this order; the first is the default reference).
  void setRuns(std::vector<ComparedRun> runs);
  const std::vector<ComparedRun>& runs() const { return runs_; }
  bool busy() const;

  void setXAxis(CompareX axis);
  CompareX xAxis() const { return axis_; }
  void setMatching(Matching matching);
  // The difference plot: `other` − `reference` (indexes into runs()) of `metric`.
  void setDifference(int reference, int other, CompareMetric metric);
  const CurveDiff& difference() const { return diff_; }
  QString differenceText() const;

  bool exportTableCsv(const QString& path, QString* error = nullptr);
  bool exportChartPng(const QString& path);

  LossChart* lossChart() const { return loss_; }
  ThroughputChart* throughputChart() const { return throughput_; }
  DifferenceChart* differenceChart() const { return difference_; }
  ComparisonTableModel* tableModel() const { return model_; }
  QTableView* tableView() const { return table_; }

  // The directory dialog of "Add TensorBoard log…", replaceable by tests (empty: cancelled).
  void setDirectoryChooser(std::function<QString()> choose) { chooseDir_ = std::move(choose); }

 public Q_SLOTS:
  void addTensorBoardDialog();
  void exportTableDialog();
  void exportPngDialog();

 Q_SIGNALS:
  void loaded();
  // What went wrong (a directory that is not a run, a file not written), one line.
  void message(const QString& text);

 private:
  void refresh();
  void updateDifference();
  void fillPairChoices();

  ComparisonLoader* loader_;
  std::vector<ComparedRun> runs_;
  QStringList paths_;
  CompareX axis_ = CompareX::Step;
  Matching matching_ = Matching::Interpolate;
  CurveDiff diff_;
  QComboBox* xAxisBox_;
  QComboBox* matchBox_;
  QComboBox* referenceBox_;
  QComboBox* otherBox_;
  QComboBox* metricBox_;
  QLabel* status_;
  QLabel* diffText_;
  LossChart* loss_;
  ThroughputChart* throughput_;
  DifferenceChart* difference_;
  ComparisonTableModel* model_;
  QTableView* table_;
  std::function<QString()> chooseDir_;
};

}  // namespace ddpdesk

// Run history: the runs under the runs directory (RunDirectory::listRuns), newest first. Open one
// to view its charts, select several to overlay them on one chart or compare them in a window of
// their own (comparison_window.h), resume a stopped one; or
// overlay a TensorBoard log's series on the chart shown (tensorboard_overlay.h).
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <vector>

#include "run/run_directory.h"

class QLabel;
class QPushButton;
class QTableView;

namespace ddpdesk {

class RunHistoryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Run, Task, Ranks, Batch, State, Steps, Loss, Started, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  void setRecords(std::vector<RunRecord> records);
  const std::vector<RunRecord>& records() const { return records_; }
  const RunRecord* record(int row) const;
  int rowOf(const QString& path) const;

  // "active (ddpdesk pid N on host)" while a monitor holds the run directory (another window, a
  // headless run, this one), else "Finished", "Stopped", "Failed", or "active / interrupted"
  // without a status.json (a monitor that died, a Slurm job whose monitor was closed).
  static QString stateText(const RunRecord& r);
  // A run can be resumed when it ended without finishing (stopped or failed) and left a
  // checkpoint behind, and no monitor holds it.
  static bool canResume(const RunRecord& r);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<RunRecord> records_;
};

class HistoryPanel : public QWidget {
  Q_OBJECT
 public:
  explicit HistoryPanel(QWidget* parent = nullptr);

  // Where runs are listed from (default RunDirectory::runsRoot()).
  void setRoot(const QString& root) { root_ = root; }
  QString root() const { return root_; }
  // The live run's directory: it cannot be resumed while it runs.
  void setActiveRun(const QString& path);

  RunHistoryModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  QStringList selectedPaths() const;
  void selectPaths(const QStringList& paths);

 public Q_SLOTS:
  void refresh();

 Q_SIGNALS:
  // One path: view that run; several: overlay them.
  void openRequested(const QStringList& paths);
  void resumeRequested(const QString& path);
  // "Compare" was pressed with these runs selected (two or more).
  void compareRequested(const QStringList& paths);
  // "Open TensorBoard log…" was pressed.
  void tensorBoardRequested();

 private:
  void updateButtons();

  QString root_;
  QString active_;
  RunHistoryModel* model_;
  QTableView* view_;
  QPushButton* open_;
  QPushButton* resume_;
  QPushButton* compare_;
  QLabel* detail_;
};

}  // namespace ddpdesk

// The queue tab: the RunQueue's entries (state, what each run varies, its run directory) with
// Add current spec, Sweep…, Up, Down, Remove, Pause/Resume and "Stop on failure". The queue
// itself (ui/monitor/queue/run_queue.h) holds the logic; this only shows it and forwards the
// buttons.
#pragma once

#include <QAbstractTableModel>
#include <QWidget>

class QCheckBox;
class QLabel;
class QPushButton;
class QTableView;

namespace ddpdesk {

class RunQueue;

class QueueTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Id, State, Run, Directory, Reason, ColumnCount };
  explicit QueueTableModel(RunQueue* queue, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  RunQueue* queue_;
};

class QueuePanel : public QWidget {
  Q_OBJECT
 public:
  explicit QueuePanel(RunQueue* queue, QWidget* parent = nullptr);

  QueueTableModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  QPushButton* addButton() const { return add_; }
  QPushButton* sweepButton() const { return sweep_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* removeButton() const { return remove_; }
  QPushButton* upButton() const { return up_; }
  QPushButton* downButton() const { return down_; }
  QCheckBox* stopOnFailureBox() const { return stopOnFailure_; }
  // The selected entry's id, -1 when none.
  int selectedId() const;
  void selectId(int id);

 Q_SIGNALS:
  void addRequested();    // "Add current spec"
  void sweepRequested();  // "Sweep…"

 private:
  void refresh();
  void moveSelected(int by);

  RunQueue* queue_;
  QueueTableModel* model_;
  QTableView* view_;
  QPushButton* add_;
  QPushButton* sweep_;
  QPushButton* up_;
  QPushButton* down_;
  QPushButton* remove_;
  QPushButton* pause_;
  QCheckBox* stopOnFailure_;
  QLabel* summary_;
};

}  // namespace ddpdesk

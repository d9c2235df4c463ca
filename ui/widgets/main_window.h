// MainWindow: composes the panels and wires them to the monitor's RunController. No logic of its
// own beyond that wiring: the form, charts, table, log and history are their own classes.
//
//   +-------------+---------------------------------------------------------+
//   | RunForm     | RunControls: Start Stop  state  elapsed  [progress]  ETA |
//   |  (config,   +---------------------------------------------------------+
//   |   presets)  | ChartsPanel: loss chart / throughput chart               |
//   |             +---------------------------------------------------------+
//   | launch cmd  | tabs: Ranks | Log | History | Queue                     |
//   +-------------+---------------------------------------------------------+
#pragma once

#include <QMainWindow>
#include <QTimer>
#include <functional>
#include <memory>
#include <vector>

#include "run_controller.h"
#include "sweep.h"

class QAction;
class QTabWidget;
class QTableView;

namespace ddpdesk {

class ChartsPanel;
class ComparisonWindow;
class DeviceProbe;
class HistoryPanel;
class LogView;
class MetricsStore;
class QueuePanel;
class RankTableModel;
class RunControls;
class RunForm;
class RunOpener;
class RunQueue;
class TensorBoardOverlay;
class StragglerBanner;
class StragglerWatch;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  RunController* controller() const { return controller_; }
  RunForm* form() const { return form_; }
  RunControls* controls() const { return controls_; }
  ChartsPanel* charts() const { return charts_; }
  RankTableModel* rankModel() const { return rankModel_; }
  LogView* logView() const { return log_; }
  HistoryPanel* history() const { return history_; }
  RunQueue* queue() const { return queue_; }
  QueuePanel* queuePanel() const { return queuePanel_; }
  TensorBoardOverlay* tensorBoard() const { return tensorBoard_; }
  StragglerBanner* stragglerBanner() const { return stragglerBanner_; }
  QTabWidget* tabs() const { return tabs_; }
  QAction* startAction() const { return start_; }
  QAction* stopAction() const { return stop_; }

  // Asked when the window is closed during a run: true means "stop the run and close". The
  // default shows a question dialog; tests answer it themselves.
  void setCloseQuestion(std::function<bool()> ask) { askClose_ = std::move(ask); }
  // Errors the user must see (default: a non-modal message box; tests collect them).
  void setErrorSink(std::function<void(const QString&)> sink) { showError_ = std::move(sink); }
  // Asks the worker for its devices (asynchronously) so the form can bound the GPU count.
  void startProbe();
  // The window's periodic refresh of controls and rank table (tests call it to skip waiting).
  void refreshNow();

 public Q_SLOTS:
  bool startRun();
  // Starts now, or as soon as the form becomes valid when all it waits for is an answer (the
  // GPU probe for `--start` with a CUDA spec, the task check for a user task); otherwise reports
  // the problem like startRun().
  void startRunWhenReady();
  void stopRun();
  // Continues a stopped run from its directory (resume = that directory).
  bool resumeRun(const QString& runDir);
  // Queues the form's spec (it starts at once when the queue is not paused and no run is
  // active).
  bool addToQueue();
  // "Sweep…": the dialog around the form's spec; its runs go to the queue.
  void openSweepDialog();
  // Queues a sweep's runs, with its directory (definition, index); false with an error shown.
  bool queueSweep(const SweepPlan& plan, const QByteArray& definition);
  // Follows a run started elsewhere (RunController::attach): its charts and rank table fill as
  // its ranks write their metrics files. File → Follow run… asks for the directory.
  bool followRun(const QString& runDir);
  void followRunDialog();
  // Shows runs from the history: one, or several overlaid.
  void openRuns(const QStringList& paths);
  void showLiveRun();
  // Opens a comparison window (comparison_window.h) on these runs.
  ComparisonWindow* compareRuns(const QStringList& paths);
  void copyTorchrunCommand();
  void copySrunCommand();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  bool launch(const RunSpec& spec);
  // launch() without the error box: the queue reports its own failures.
  bool startLive(const RunSpec& spec, QString* error);
  void loadQueue();
  void onStateChanged(RunController::State state);
  void updateActions();
  void buildMenus();
  QWidget* buildLeft();
  void status(const QString& text);

  RunController* controller_;
  DeviceProbe* probe_;
  RunForm* form_;
  RunControls* controls_;
  ChartsPanel* charts_;
  RankTableModel* rankModel_;
  QTableView* rankView_;
  LogView* log_;
  HistoryPanel* history_;
  RunQueue* queue_;
  QueuePanel* queuePanel_;
  QTabWidget* tabs_;
  QAction* start_;
  QAction* stop_;
  QTimer refresh_;
  RunOpener* opener_;           // runs opened from the history
  StragglerWatch* stragglers_;  // of the live run: the banner and the rank table show it
  StragglerBanner* stragglerBanner_;
  TensorBoardOverlay* tensorBoard_;  // TensorBoard series overlaid on the charts
  std::function<bool()> askClose_;
  std::function<void(const QString&)> showError_;
  bool closeAfterStop_ = false;
};

}  // namespace ddpdesk

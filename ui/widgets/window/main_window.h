// MainWindow: composes the panels and wires them to the monitor's RunController. No logic of its
// own beyond that wiring: the form, charts, table, log and history are their own classes, and so
// is what the window does with them: StartStopActions (Start/Stop), RunLifecycle (starting,
// stopping, resuming, following runs), QueueActions (the queue and sweeps), ShownRuns (live, opened
// and compared runs), LaunchCommandPanel, LiveRefresh, RunNotifier (desktop notifications), and
// the menus (window_menus.h).
//
//   +-------------+---------------------------------------------------------+
//   | RunSpecForm     | RunStatusStrip: Start Stop  state  elapsed  [progress]  ETA |
//   |  (config,   +---------------------------------------------------------+
//   |   presets)  | ChartsPanel: loss chart / throughput chart               |
//   |             +---------------------------------------------------------+
//   | launch cmd  | tabs: Ranks | Log | History | Queue                     |
//   +-------------+---------------------------------------------------------+
#pragma once

#include <QMainWindow>
#include <functional>

#include "run/run_controller.h"
#include "sweep.h"

class QAction;
class QTabWidget;

namespace ddpdesk {

class ChartsPanel;
class ComparisonWindow;
class DeviceProbe;
class HistoryPanel;
class LaunchCommandPanel;
class LiveRefresh;
class LogView;
class QueueActions;
class QueuePanel;
class RankTableModel;
class StartStopActions;
class RunStatusStrip;
class RunLifecycle;
class RunNotifier;
class RunSpecForm;
class RunQueue;
class ShownRuns;
class HangBanner;
class StragglerBanner;
class StragglerWatch;
class TensorBoardOverlay;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  RunController* controller() const { return controller_; }
  RunSpecForm* form() const { return form_; }
  RunStatusStrip* controls() const { return controls_; }
  ChartsPanel* charts() const { return charts_; }
  RankTableModel* rankModel() const { return rankModel_; }
  LogView* logView() const { return log_; }
  HistoryPanel* history() const { return history_; }
  RunQueue* queue() const { return queue_; }
  QueuePanel* queuePanel() const { return queuePanel_; }
  TensorBoardOverlay* tensorBoard() const { return tensorBoard_; }
  StragglerBanner* stragglerBanner() const { return stragglerBanner_; }
  HangBanner* hangBanner() const { return hangBanner_; }
  QTabWidget* tabs() const { return tabs_; }
  RunLifecycle* lifecycle() const { return flow_; }
  RunNotifier* notifier() const { return notifier_; }
  QAction* startAction() const;
  QAction* stopAction() const;
  QAction* stacksAction() const;

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
  // A stop signal to the window (SIGTERM, SIGHUP: a logout, a closed terminal; SIGINT): Close
  // with "stop the run" answered. A run of ours stops gracefully (its checkpoint) and the window
  // closes when every rank has exited; asked again while it stops, the ranks are killed. Without
  // a run of ours the window closes at once.
  void closeOnSignal();
  // The Stacks button: every rank's stack taken now (RunController::takeStacks); the hang banner
  // shows the verdict and the file opens once they are in.
  void takeStacks();
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
  QWidget* buildLeft();
  void status(const QString& text);

  RunController* controller_;
  DeviceProbe* probe_;
  RunSpecForm* form_;
  StartStopActions* actions_;
  RunStatusStrip* controls_;
  ChartsPanel* charts_;
  RankTableModel* rankModel_;
  LogView* log_;
  HistoryPanel* history_;
  RunQueue* queue_;
  QueuePanel* queuePanel_;
  QTabWidget* tabs_;
  StragglerWatch* stragglers_;  // of the live run: the banner and the rank table show it
  StragglerBanner* stragglerBanner_;
  HangBanner* hangBanner_;            // the hang doctor's verdict (a stall, or the Stacks button)
  bool openStacksWhenTaken_ = false;  // the Stacks button asked: its file opens
  TensorBoardOverlay* tensorBoard_;   // TensorBoard series overlaid on the charts
  RunLifecycle* flow_;
  QueueActions* queueActions_;
  ShownRuns* viewer_;
  LaunchCommandPanel* launchCommand_;
  LiveRefresh* refresh_;
  RunNotifier* notifier_;
  std::function<bool()> askClose_;
  std::function<void(const QString&)> showError_;
};

}  // namespace ddpdesk

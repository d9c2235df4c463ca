#include "window/main_window.h"

#include <QCloseEvent>
#include <QHeaderView>
#include <QMessageBox>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include "charts/charts_panel.h"
#include "charts/shown_runs.h"
#include "charts/tensorboard_overlay.h"
#include "checks/device_probe.h"
#include "form/launch_command_panel.h"
#include "form/run_spec_form.h"
#include "form/spec_settings.h"
#include "history/history_panel.h"
#include "live/hang_banner.h"
#include "live/live_refresh.h"
#include "live/log_view.h"
#include "live/rank_table.h"
#include "live/run_status_strip.h"
#include "live/straggler_banner.h"
#include "metrics/metrics_store.h"
#include "metrics/straggler_watch.h"
#include "queue/queue_actions.h"
#include "queue/queue_panel.h"
#include "queue/run_queue.h"
#include "run/end_command.h"
#include "run/restart_policy.h"
#include "window/desktop_notifications.h"
#include "window/follow_run_dialog.h"
#include "window/resources.h"
#include "window/run_lifecycle.h"
#include "window/run_notifier.h"
#include "window/start_stop_actions.h"
#include "window/window_menus.h"

namespace ddpdesk {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), controller_(new RunController(this)), probe_(new DeviceProbe(this)) {
  ensureResources();
  setWindowTitle(tr("ddpdesk"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/ddpdesk.png")));

  // The parts.
  form_ = new RunSpecForm(this);
  actions_ = new StartStopActions(controller_, form_, this);
  controls_ = new RunStatusStrip(actions_->start(), actions_->stop(), actions_->stacks(), this);
  charts_ = new ChartsPanel(this);
  rankModel_ = new RankTableModel(this);
  log_ = new LogView(this);
  history_ = new HistoryPanel(this);
  queue_ = new RunQueue(controller_, this);
  queuePanel_ = new QueuePanel(queue_, this);
  tensorBoard_ = new TensorBoardOverlay(charts_, this);
  stragglers_ = new StragglerWatch(this);
  stragglers_->setStore(controller_->store());
  stragglerBanner_ = new StragglerBanner(this);
  stragglerBanner_->setWatch(stragglers_);
  hangBanner_ = new HangBanner(this);
  flow_ = new RunLifecycle(controller_, form_, log_, history_, this);
  queueActions_ = new QueueActions(queue_, controller_, flow_, form_, this);
  viewer_ = new ShownRuns(controller_, charts_, this);
  launchCommand_ = new LaunchCommandPanel(form_, this);
  auto* notifications = new DesktopNotifications(this);
  notifier_ = new RunNotifier(controller_, notifications, this);
  notifier_->setWatched([this] { return isActiveWindow() && !isMinimized(); });

  // The layout.
  auto* rankView = new QTableView(this);
  rankView->setModel(rankModel_);
  rankView->verticalHeader()->setVisible(false);
  rankView->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  rankView->setSelectionMode(QAbstractItemView::NoSelection);
  rankView->setAlternatingRowColors(true);
  refresh_ = new LiveRefresh(controller_, controls_, rankModel_, rankView, stragglers_, this);

  tabs_ = new QTabWidget(this);
  tabs_->addTab(rankView, tr("Ranks"));
  tabs_->addTab(log_, tr("Log"));
  tabs_->addTab(history_, tr("History"));
  tabs_->addTab(queuePanel_, tr("Queue"));

  auto* right = new QWidget(this);
  auto* rv = new QVBoxLayout(right);
  rv->setContentsMargins(0, 0, 0, 0);
  rv->addWidget(controls_);
  rv->addWidget(stragglerBanner_);
  rv->addWidget(hangBanner_);
  auto* vsplit = new QSplitter(Qt::Vertical, right);
  vsplit->addWidget(charts_);
  vsplit->addWidget(tabs_);
  vsplit->setStretchFactor(0, 3);
  vsplit->setStretchFactor(1, 1);
  vsplit->setSizes({700, 200});
  rv->addWidget(vsplit, 1);

  auto* hsplit = new QSplitter(Qt::Horizontal, this);
  hsplit->addWidget(buildLeft());
  hsplit->addWidget(right);
  hsplit->setStretchFactor(1, 1);
  hsplit->setSizes({340, 1100});
  setCentralWidget(hsplit);
  addWindowMenus(this);
  resize(1500, 950);

  askClose_ = [this] {
    return QMessageBox::question(
               this, tr("A run is active"),
               tr("Stop the run gracefully (it checkpoints at the next step) and close?"),
               QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) == QMessageBox::Yes;
  };
  showError_ = [this](const QString& text) {
    auto* box = new QMessageBox(QMessageBox::Warning, tr("ddpdesk"), text, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();  // not exec(): the event loop, and the run, go on
  };

  // The wiring: what each part tells the others, the status line and the user.
  auto toStatus = [this](const QString& text) { status(text); };
  auto toError = [this](const QString& text) { showError_(text); };
  connect(actions_->start(), &QAction::triggered, this, &MainWindow::startRun);
  connect(actions_->stop(), &QAction::triggered, this, &MainWindow::stopRun);
  connect(actions_->stacks(), &QAction::triggered, this, &MainWindow::takeStacks);
  connect(form_, &RunSpecForm::validityChanged, actions_, &StartStopActions::update);
  connect(form_, &RunSpecForm::message, this, toStatus);
  connect(charts_, &ChartsPanel::message, this, toStatus);
  connect(tensorBoard_, &TensorBoardOverlay::message, this, toStatus);
  connect(viewer_, &ShownRuns::message, this, toStatus);
  connect(launchCommand_, &LaunchCommandPanel::message, this, toStatus);
  connect(history_, &HistoryPanel::openRequested, this, &MainWindow::openRuns);
  connect(history_, &HistoryPanel::resumeRequested, this, &MainWindow::resumeRun);
  connect(history_, &HistoryPanel::compareRequested, this, &MainWindow::compareRuns);
  connect(history_, &HistoryPanel::tensorBoardRequested, tensorBoard_,
          &TensorBoardOverlay::openDialog);
  connect(probe_, &DeviceProbe::finished, form_, &RunSpecForm::setProbeResult);
  form_->setWorkerProgram([this] { return controller_->workerProgram(); });
  connect(controller_, &RunController::stateChanged, stragglerBanner_,
          [this](RunController::State state) {
            stragglerBanner_->setRunEnded(RunController::isTerminal(state));
          });
  connect(controller_, &RunController::logLine, log_, &LogView::appendLine);
  // The hang doctor: its verdict in the banner and the log; the file opens when it was asked for.
  connect(controller_, &RunController::stacksTaken, this,
          [this](const QString& why, const QString& verdict, const QString& path) {
            hangBanner_->showVerdict(why, verdict, path, controller_->store()->progress().step);
            const QString where = path.isEmpty() ? tr("the stacks file could not be written")
                                                 : tr("stacks in %1").arg(path);
            log_->appendLine(LogBuffer::kMonitor, !why.isEmpty(),
                             tr("hang doctor: %1 (%2)").arg(verdict, where));
            status(tr("hang doctor: %1").arg(verdict));
            actions_->update();
            if (why.isEmpty() && openStacksWhenTaken_) hangBanner_->openStacks();
            openStacksWhenTaken_ = false;
          });
  connect(controller_->store(), &MetricsStore::updated, hangBanner_,
          [this] { hangBanner_->noteStep(controller_->store()->progress().step); });
  connect(controller_, &RunController::starting, hangBanner_, [this] {
    if (controller_->restarts() == 0) hangBanner_->reset();  // a new run, not a restart of it
  });
  connect(controller_, &RunController::warning, this,
          [this](const QString& w) { log_->appendLine(LogBuffer::kMonitor, true, w); });
  connect(controller_, &RunController::restarting, this,
          [this](int attempt, int maxRestarts, const QString& cause, int delayMs) {
            const QString line = restartLine(attempt, maxRestarts, delayMs,
                                             controller_->store()->progress().step, cause);
            log_->appendLine(LogBuffer::kMonitor, true, line);
            status(line);
          });
  // The on_end command's troubles (it runs after the run ended) and notifications that cannot be
  // shown: lines of the log.
  connect(controller_->endCommands(), &EndCommands::warning, this,
          [this](const QString& w) { log_->appendLine(LogBuffer::kMonitor, true, w); });
  connect(notifications, &DesktopNotifications::unavailable, this,
          [this](const QString& why) { log_->appendLine(LogBuffer::kMonitor, false, why); });
  connect(controller_, &RunController::rankExited, this, [this](int rank, const QString& how) {
    log_->appendLine(LogBuffer::kMonitor, false, tr("rank %1 %2").arg(rank).arg(how));
  });
  connect(stragglers_, &StragglerWatch::flagged, this,
          [this](int, const QString& text) { log_->appendLine(LogBuffer::kMonitor, false, text); });
  connect(stragglers_, &StragglerWatch::cleared, this,
          [this](int, const QString& text) { log_->appendLine(LogBuffer::kMonitor, false, text); });
  connect(flow_, &RunLifecycle::message, this, toStatus);
  connect(flow_, &RunLifecycle::error, this, toError);
  connect(flow_, &RunLifecycle::liveRunShown, viewer_, &ShownRuns::showLive);
  connect(flow_, &RunLifecycle::stateShown, this, [this] {
    actions_->update();
    refresh_->refreshNow();
  });
  connect(flow_, &RunLifecycle::failureShown, this, [this] { tabs_->setCurrentWidget(log_); });
  connect(flow_, &RunLifecycle::closeWhenEnded, this, &QWidget::close);
  connect(queueActions_, &QueueActions::message, this, toStatus);
  connect(queueActions_, &QueueActions::error, this, toError);
  connect(queueActions_, &QueueActions::sweepQueued, this,
          [this] { tabs_->setCurrentWidget(queuePanel_); });
  connect(queuePanel_, &QueuePanel::addRequested, this, &MainWindow::addToQueue);
  connect(queuePanel_, &QueuePanel::sweepRequested, this, &MainWindow::openSweepDialog);

  // The state it opens in.
  queueActions_->load();
  form_->setSpec(openingSpec());
  history_->refresh();
  actions_->update();
  refresh_->refreshNow();
}

MainWindow::~MainWindow() {
  // Charts hold pointers into the stores; let go of them before the stores go.
  charts_->setSources({}, true);
}

QWidget* MainWindow::buildLeft() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  v->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea(panel);
  scroll->setWidget(form_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setMinimumWidth(270);
  v->addWidget(scroll, 1);
  v->addWidget(launchCommand_);
  return panel;
}

QAction* MainWindow::startAction() const {
  return actions_->start();
}

QAction* MainWindow::stopAction() const {
  return actions_->stop();
}

QAction* MainWindow::stacksAction() const {
  return actions_->stacks();
}

void MainWindow::startProbe() {
  probe_->start(controller_->workerProgram());
}

void MainWindow::refreshNow() {
  refresh_->refreshNow();
}

void MainWindow::status(const QString& text) {
  statusBar()->showMessage(text, 8000);
}

bool MainWindow::startRun() {
  return flow_->startFromForm();
}

void MainWindow::startRunWhenReady() {
  flow_->startWhenReady();
}

void MainWindow::stopRun() {
  flow_->stop();
}

void MainWindow::takeStacks() {
  if (!controller_->takeStacks()) return;  // no run, or stacks already being taken
  openStacksWhenTaken_ = true;
  actions_->update();
  status(tr("taking every rank's stack (the run goes on)…"));
}

bool MainWindow::resumeRun(const QString& runDir) {
  return flow_->resume(runDir);
}

bool MainWindow::addToQueue() {
  return queueActions_->addFromForm();
}

void MainWindow::openSweepDialog() {
  queueActions_->openSweepDialog();
}

bool MainWindow::queueSweep(const SweepPlan& plan, const QByteArray& definition) {
  return queueActions_->queueSweep(plan, definition);
}

void MainWindow::followRunDialog() {
  FollowRunDialog dialog(this);
  if (dialog.exec() == QDialog::Accepted) followRun(dialog.target());
}

bool MainWindow::followRun(const QString& runDir) {
  return flow_->follow(runDir);
}

void MainWindow::openRuns(const QStringList& paths) {
  viewer_->open(paths);
}

void MainWindow::showLiveRun() {
  viewer_->showLive();
}

ComparisonWindow* MainWindow::compareRuns(const QStringList& paths) {
  return viewer_->compare(paths);
}

void MainWindow::copyTorchrunCommand() {
  launchCommand_->copyTorchrunCommand();
}

void MainWindow::copySrunCommand() {
  launchCommand_->copySrunCommand();
}

void MainWindow::closeOnSignal() {
  if (!controller_->isActive() || controller_->isAttached()) {
    close();
    return;
  }
  if (flow_->stoppingToClose()) {
    flow_->stop();  // again: kill the ranks (the window still closes once they are gone)
    return;
  }
  saveLastSpec(flow_->draftSpec());
  flow_->stopToClose();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // A followed run's ranks are not ours: closing the window only stops following them.
  if (!controller_->isActive() || controller_->isAttached()) {
    saveLastSpec(flow_->draftSpec());
    event->accept();
    return;
  }
  event->ignore();
  if (flow_->stoppingToClose()) return;  // the window closes when the ranks are gone
  if (!askClose_ || !askClose_()) return;
  saveLastSpec(flow_->draftSpec());
  flow_->stopToClose();
}

}  // namespace ddpdesk

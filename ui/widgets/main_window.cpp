#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "charts_panel.h"
#include "comparison_window.h"
#include "device_probe.h"
#include "launch_command.h"
#include "log_view.h"
#include "loss_chart.h"
#include "metrics_store.h"
#include "queue_panel.h"
#include "rank_table.h"
#include "resources.h"
#include "run_controls.h"
#include "run_directory.h"
#include "run_form.h"
#include "run_history.h"
#include "run_opener.h"
#include "run_queue.h"
#include "spec_settings.h"
#include "straggler_banner.h"
#include "straggler_watch.h"
#include "sweep_dialog.h"
#include "sweep_directory.h"
#include "tensorboard_overlay.h"
#include "throughput_chart.h"

namespace ddpdesk {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), controller_(new RunController(this)), probe_(new DeviceProbe(this)) {
  ensureResources();
  setWindowTitle(tr("ddpdesk"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/ddpdesk.png")));

  start_ = new QAction(tr("Start"), this);
  start_->setShortcut(QKeySequence(tr("Ctrl+R")));
  start_->setToolTip(tr("Launch the ranks with this configuration (Ctrl+R)"));
  connect(start_, &QAction::triggered, this, &MainWindow::startRun);
  stop_ = new QAction(tr("Stop"), this);
  stop_->setShortcut(QKeySequence(tr("Ctrl+.")));
  stop_->setToolTip(tr("Stop gracefully at the next optimizer step, with a checkpoint (Ctrl+.)"));
  connect(stop_, &QAction::triggered, this, &MainWindow::stopRun);

  form_ = new RunForm(this);
  controls_ = new RunControls(start_, stop_, this);
  charts_ = new ChartsPanel(this);
  rankModel_ = new RankTableModel(this);
  log_ = new LogView(this);
  history_ = new HistoryPanel(this);
  queue_ = new RunQueue(controller_, this);
  queuePanel_ = new QueuePanel(queue_, this);
  opener_ = new RunOpener(this);
  tensorBoard_ = new TensorBoardOverlay(charts_, this);
  stragglers_ = new StragglerWatch(this);
  stragglers_->setStore(controller_->store());
  stragglerBanner_ = new StragglerBanner(this);
  stragglerBanner_->setWatch(stragglers_);

  rankView_ = new QTableView(this);
  rankView_->setModel(rankModel_);
  rankView_->verticalHeader()->setVisible(false);
  rankView_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  rankView_->setSelectionMode(QAbstractItemView::NoSelection);
  rankView_->setAlternatingRowColors(true);

  tabs_ = new QTabWidget(this);
  tabs_->addTab(rankView_, tr("Ranks"));
  tabs_->addTab(log_, tr("Log"));
  tabs_->addTab(history_, tr("History"));
  tabs_->addTab(queuePanel_, tr("Queue"));

  auto* right = new QWidget(this);
  auto* rv = new QVBoxLayout(right);
  rv->setContentsMargins(0, 0, 0, 0);
  rv->addWidget(controls_);
  rv->addWidget(stragglerBanner_);
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
  buildMenus();
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

  connect(form_, &RunForm::validityChanged, this, &MainWindow::updateActions);
  connect(form_, &RunForm::message, this, &MainWindow::status);
  connect(charts_, &ChartsPanel::message, this, &MainWindow::status);
  connect(charts_, &ChartsPanel::backToLiveRequested, this, &MainWindow::showLiveRun);
  connect(history_, &HistoryPanel::openRequested, this, &MainWindow::openRuns);
  connect(opener_, &RunOpener::opening, charts_, &ChartsPanel::setOpening);
  connect(opener_, &RunOpener::problems, this, &MainWindow::status);
  connect(opener_, &RunOpener::opened, this, [this](const ChartSources& sources) {
    if (sources.empty())
      charts_->setOpening({});
    else
      charts_->setSources(sources, false);
  });
  connect(history_, &HistoryPanel::resumeRequested, this, &MainWindow::resumeRun);
  connect(history_, &HistoryPanel::compareRequested, this, &MainWindow::compareRuns);
  connect(history_, &HistoryPanel::tensorBoardRequested, tensorBoard_,
          &TensorBoardOverlay::openDialog);
  connect(tensorBoard_, &TensorBoardOverlay::message, this, &MainWindow::status);
  connect(probe_, &DeviceProbe::finished, form_, &RunForm::setProbeResult);
  form_->setWorkerProgram([this] { return controller_->workerProgram(); });
  connect(controller_, &RunController::logLine, log_, &LogView::appendLine);
  connect(controller_, &RunController::warning, this,
          [this](const QString& w) { log_->appendLine(LogBuffer::kMonitor, true, w); });
  connect(controller_, &RunController::rankExited, this, [this](int rank, const QString& how) {
    log_->appendLine(LogBuffer::kMonitor, false, tr("rank %1 %2").arg(rank).arg(how));
  });
  connect(controller_, &RunController::stateChanged, this,
          [this](RunController::State s) { onStateChanged(s); });
  connect(stragglers_, &StragglerWatch::flagged, this,
          [this](int, const QString& text) { log_->appendLine(LogBuffer::kMonitor, false, text); });
  connect(stragglers_, &StragglerWatch::cleared, this,
          [this](int, const QString& text) { log_->appendLine(LogBuffer::kMonitor, false, text); });

  queue_->setLauncher([this](const RunSpec& spec, QString* error) {
    if (!startLive(spec, error)) return false;
    status(tr("Queue: started %1").arg(controller_->runDirectory()));
    return true;
  });
  SweepDirectory::follow(queue_);
  connect(queue_, &RunQueue::message, this, &MainWindow::status);
  connect(queuePanel_, &QueuePanel::addRequested, this, &MainWindow::addToQueue);
  connect(queuePanel_, &QueuePanel::sweepRequested, this, &MainWindow::openSweepDialog);
  loadQueue();

  form_->setSpec(loadLastSpec().value_or(newcomerSpec()));
  history_->refresh();
  refresh_.setInterval(250);
  connect(&refresh_, &QTimer::timeout, this, &MainWindow::refreshNow);
  refresh_.start();
  updateActions();
  refreshNow();
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
  scroll->setMinimumWidth(300);
  v->addWidget(scroll, 1);
  // The cluster command for what the form says, kept current: copy it from here or the menu.
  auto* cmdLabel = new QLabel(tr("<b>On a cluster</b> (torchrun):"), panel);
  v->addWidget(cmdLabel);
  auto* cmd = new QPlainTextEdit(panel);
  cmd->setObjectName(QStringLiteral("launchCommand"));
  cmd->setReadOnly(true);
  cmd->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  cmd->setMaximumHeight(110);
  cmd->setToolTip(tr("The torchrun command line that runs this configuration with ddpdesk-worker"));
  auto update = [this, cmd] { cmd->setPlainText(torchrunCommand(form_->spec())); };
  connect(form_, &RunForm::specChanged, cmd, update);
  update();
  v->addWidget(cmd);
  auto* copy = new QToolButton(panel);
  copy->setText(tr("Copy launch command"));
  copy->setToolTip(tr("The command line that runs this configuration on a cluster"));
  copy->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(copy);
  menu->addAction(tr("torchrun"), this, &MainWindow::copyTorchrunCommand);
  menu->addAction(tr("Slurm srun"), this, &MainWindow::copySrunCommand);
  copy->setMenu(menu);
  v->addWidget(copy);
  return panel;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("Load preset…"), form_, &RunForm::loadPresetDialog);
  file->addAction(tr("Save preset…"), form_, &RunForm::savePresetDialog);
  file->addSeparator();
  file->addAction(tr("Export chart as PNG…"), charts_, &ChartsPanel::exportPngDialog);
  file->addAction(tr("Export data as CSV…"), charts_, &ChartsPanel::exportCsvDialog);
  file->addAction(tr("Open TensorBoard log…"), tensorBoard_, &TensorBoardOverlay::openDialog);
  file->addAction(tr("Follow run…"), this, &MainWindow::followRunDialog);
  file->addSeparator();
  file->addAction(tr("Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(start_);
  run->addAction(stop_);
  run->addSeparator();
  run->addAction(tr("Copy torchrun command"), this, &MainWindow::copyTorchrunCommand);
  run->addAction(tr("Copy srun command"), this, &MainWindow::copySrunCommand);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("Live run"), this, &MainWindow::showLiveRun);
  view->addAction(tr("Refresh history"), history_, &HistoryPanel::refresh);
  view->addAction(tr("Reset chart views"), this, [this] {
    charts_->lossChart()->resetView();
    charts_->throughputChart()->resetView();
  });
}

void MainWindow::startProbe() {
  probe_->start(controller_->workerProgram());
}

void MainWindow::status(const QString& text) {
  statusBar()->showMessage(text, 8000);
}

bool MainWindow::startRun() {
  if (controller_->isActive()) return false;
  if (!form_->isValid()) {
    const auto errors = form_->errors();
    showError_(tr("The configuration is not valid: %1 %2").arg(errors.firstKey(), errors.first()));
    return false;
  }
  return launch(form_->spec());
}

void MainWindow::startRunWhenReady() {
  if (!form_->waitingOnly()) {
    startRun();
    return;
  }
  status(tr("Waiting for the GPU count or the task check before starting"));
  auto conn = std::make_shared<QMetaObject::Connection>();
  *conn = connect(form_, &RunForm::specChanged, this, [this, conn] {
    if (form_->waitingOnly()) return;
    disconnect(*conn);
    startRun();  // starts, or says why the probe's or the check's answer rules the spec out
  });
}

bool MainWindow::resumeRun(const QString& runDir) {
  if (controller_->isActive()) return false;
  const auto record = RunDirectory::readRecord(runDir);
  if (!record || !record->specValid) {
    showError_(tr("%1 holds no readable spec.json").arg(runDir));
    return false;
  }
  RunSpec spec = record->spec;
  spec.resume = QFileInfo(runDir).absoluteFilePath().toStdString();
  spec.run_dir.clear();  // the controller continues in the resumed directory
  return launch(spec);
}

bool MainWindow::launch(const RunSpec& spec) {
  QString error;
  if (!startLive(spec, &error)) {
    showError_(tr("Could not start the run: %1").arg(error));
    return false;
  }
  if (spec.resume.empty()) saveLastSpec(spec);
  return true;
}

bool MainWindow::startLive(const RunSpec& spec, QString* error) {
  log_->clear();
  log_->clearFailure();
  log_->setWorld(spec.nproc);
  if (!controller_->start(spec, error)) return false;
  showLiveRun();
  history_->setActiveRun(controller_->runDirectory());
  history_->refresh();
  status(tr("Started %1 rank(s) in %2").arg(spec.nproc).arg(controller_->runDirectory()));
  updateActions();
  return true;
}

void MainWindow::loadQueue() {
  QString error;
  if (!queue_->load(RunQueue::defaultPath(), &error)) {
    showError_(tr("The run queue could not be read, so it starts empty: %1").arg(error));
    return;
  }
  // Opening the window never starts training by itself: runs left waiting (one interrupted by
  // a crash, say) go on when the queue is resumed.
  if (queue_->pendingCount() > 0 && !queue_->isPaused()) {
    queue_->setPaused(true);
    status(tr("The queue has %1 run(s) waiting; Resume queue continues it")
               .arg(queue_->pendingCount()));
  }
}

bool MainWindow::addToQueue() {
  if (!form_->isValid()) {
    const auto errors = form_->errors();
    showError_(tr("The configuration is not valid: %1 %2").arg(errors.firstKey(), errors.first()));
    return false;
  }
  RunSpec spec = form_->spec();
  spec.resume.clear();  // the queue resumes its own runs
  queue_->add(spec);
  queue_->startNext();
  return true;
}

void MainWindow::openSweepDialog() {
  auto* dialog = new SweepDialog(form_->spec(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this,
          [this, dialog] { queueSweep(dialog->plan(), dialog->definition()); });
  dialog->open();
}

bool MainWindow::queueSweep(const SweepPlan& plan, const QByteArray& definition) {
  if (!plan.ok()) {
    showError_(QString::fromStdString(plan.error));
    return false;
  }
  QString error;
  const QString dir = SweepDirectory::create(plan, definition, &error);
  if (dir.isEmpty()) {
    showError_(error);
    return false;
  }
  if (plan.stop_on_failure) queue_->setStopOnFailure(true);
  SweepDirectory::addRuns(plan, dir, queue_);
  tabs_->setCurrentWidget(queuePanel_);
  status(tr("Queued %1 run(s) of sweep %2").arg(plan.runs.size()).arg(dir));
  queue_->startNext();
  return true;
}

void MainWindow::followRunDialog() {
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Follow a run: its directory (ranks write metrics/rank-N.jsonl there)"));
  if (!dir.isEmpty()) followRun(dir);
}

bool MainWindow::followRun(const QString& runDir) {
  if (controller_->isActive()) {
    showError_(tr("A run is active: stop it or wait for it before following another"));
    return false;
  }
  QString error;
  if (!controller_->attach(runDir, &error)) {
    showError_(tr("Could not follow the run: %1").arg(error));
    return false;
  }
  log_->clear();
  log_->clearFailure();
  showLiveRun();
  status(tr("Following %1").arg(controller_->runDirectory()));
  updateActions();
  return true;
}

void MainWindow::stopRun() {
  if (controller_->state() == RunController::State::Stopping) {
    controller_->kill();  // a second Stop: do not wait for the step boundary
    return;
  }
  controller_->stop();
}

void MainWindow::showLiveRun() {
  opener_->cancel();
  if (controller_->runDirectory().isEmpty()) {
    charts_->setSources({}, true);
    return;
  }
  charts_->setSources({{QFileInfo(controller_->runDirectory()).fileName(), controller_->store()}},
                      true);
}

void MainWindow::openRuns(const QStringList& paths) {
  opener_->open(paths, controller_->isActive() ? controller_->runDirectory() : QString(),
                controller_->store());
}

void MainWindow::copyTorchrunCommand() {
  const QString cmd = torchrunCommand(form_->spec());
  QApplication::clipboard()->setText(cmd);
  status(tr("Copied: %1").arg(cmd));
}

void MainWindow::copySrunCommand() {
  const QString cmd = srunCommand(form_->spec());
  QApplication::clipboard()->setText(cmd);
  status(tr("Copied: %1").arg(cmd));
}

void MainWindow::refreshNow() {
  controls_->refresh(*controller_);
  rankModel_->setRows(buildRankRows(controller_->ranks(), *controller_->store(), stragglers_));
  // The GPU columns only when some rank has a GPU.
  for (const int c : {RankTableModel::GpuUtil, RankTableModel::GpuMemory})
    rankView_->setColumnHidden(c, !rankModel_->hasGpu());
}

void MainWindow::updateActions() {
  const bool active = controller_->isActive();
  start_->setEnabled(!active && form_->isValid());
  stop_->setEnabled(active);
  const bool stopping = controller_->state() == RunController::State::Stopping;
  stop_->setText(stopping ? tr("Kill") : tr("Stop"));
  stop_->setToolTip(stopping ? tr("Kill the ranks now, without waiting for a checkpoint")
                             : tr("Stop gracefully at the next optimizer step, with a checkpoint "
                                  "(Ctrl+.)"));
  form_->setEnabled(!active);
}

void MainWindow::onStateChanged(RunController::State s) {
  updateActions();
  refreshNow();
  if (!RunController::isTerminal(s)) return;
  log_->flush();
  history_->setActiveRun(QString());
  history_->refresh();
  const QString reason = controller_->reason();
  if (s == RunController::State::Failed) {
    log_->showFailure(tr("Run failed"), reason);
    const auto& f = controller_->failure();
    if (f.rank >= 0) log_->setFilter(f.rank);  // the failed rank's whole output
    tabs_->setCurrentWidget(log_);
    status(tr("Run failed: %1").arg(reason.section(QLatin1Char('\n'), 0, 0)));
  } else {
    status(s == RunController::State::Finished ? tr("Run finished")
                                               : tr("Run stopped: %1").arg(reason));
  }
  if (closeAfterStop_) close();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // A followed run's ranks are not ours: closing the window only stops following them.
  if (!controller_->isActive() || controller_->isAttached()) {
    saveLastSpec(form_->spec());
    event->accept();
    return;
  }
  event->ignore();
  if (closeAfterStop_) return;  // already stopping; the window closes when the ranks are gone
  if (!askClose_ || !askClose_()) return;
  closeAfterStop_ = true;
  saveLastSpec(form_->spec());
  status(tr("Stopping the run; the window closes when every rank has exited"));
  controller_->stop();
}

ComparisonWindow* MainWindow::compareRuns(const QStringList& paths) {
  auto* window = new ComparisonWindow(this);
  window->setWindowFlag(Qt::Window);  // a window of its own, closed with the main one
  window->setAttribute(Qt::WA_DeleteOnClose);
  connect(window, &ComparisonWindow::message, this, &MainWindow::status);
  window->load(paths);
  window->show();
  return window;
}

}  // namespace ddpdesk

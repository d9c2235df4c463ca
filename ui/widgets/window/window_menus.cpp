#include "window/window_menus.h"

#include <QMenu>
#include <QMenuBar>

#include "charts/charts_panel.h"
#include "charts/loss_chart.h"
#include "charts/tensorboard_overlay.h"
#include "charts/throughput_chart.h"
#include "form/run_spec_form.h"
#include "history/history_panel.h"
#include "window/main_window.h"

namespace ddpdesk {

void addWindowMenus(MainWindow* w) {
  QMenuBar* bar = w->menuBar();
  QMenu* file = bar->addMenu(MainWindow::tr("&File"));
  file->addAction(MainWindow::tr("Load preset…"), w->form(), &RunSpecForm::loadPresetDialog);
  file->addAction(MainWindow::tr("Save preset…"), w->form(), &RunSpecForm::savePresetDialog);
  file->addSeparator();
  file->addAction(MainWindow::tr("Export chart as PNG…"), w->charts(),
                  &ChartsPanel::exportPngDialog);
  file->addAction(MainWindow::tr("Export data as CSV…"), w->charts(),
                  &ChartsPanel::exportCsvDialog);
  file->addAction(MainWindow::tr("Open TensorBoard log…"), w->tensorBoard(),
                  &TensorBoardOverlay::openDialog);
  file->addAction(MainWindow::tr("Follow run…"), w, &MainWindow::followRunDialog);
  file->addSeparator();
  file->addAction(MainWindow::tr("Quit"), QKeySequence::Quit, w, &QWidget::close);
  QMenu* run = bar->addMenu(MainWindow::tr("&Run"));
  run->addAction(w->startAction());
  run->addAction(w->stopAction());
  run->addAction(w->stacksAction());
  run->addSeparator();
  run->addAction(MainWindow::tr("Copy torchrun command"), w, &MainWindow::copyTorchrunCommand);
  run->addAction(MainWindow::tr("Copy srun command"), w, &MainWindow::copySrunCommand);
  QMenu* view = bar->addMenu(MainWindow::tr("&View"));
  view->addAction(MainWindow::tr("Live run"), w, &MainWindow::showLiveRun);
  view->addAction(MainWindow::tr("Refresh history"), w->history(), &HistoryPanel::refresh);
  view->addAction(MainWindow::tr("Reset chart views"), w, [w] {
    w->charts()->lossChart()->resetView();
    w->charts()->throughputChart()->resetView();
  });
}

}  // namespace ddpdesk

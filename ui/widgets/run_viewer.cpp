#include "run_viewer.h"

#include <QFileInfo>
#include <QWidget>

#include "charts_panel.h"
#include "comparison_window.h"
#include "run_controller.h"
#include "run_opener.h"
#include "screen_fit.h"

namespace ddpdesk {

RunViewer::RunViewer(RunController* controller, ChartsPanel* charts, QWidget* window)
    : QObject(window),
      controller_(controller),
      charts_(charts),
      window_(window),
      opener_(new RunOpener(this)) {
  connect(opener_, &RunOpener::opening, charts_, &ChartsPanel::setOpening);
  connect(opener_, &RunOpener::problems, this, &RunViewer::message);
  connect(opener_, &RunOpener::opened, this, [this](const ChartSources& sources) {
    if (sources.empty())
      charts_->setOpening({});
    else
      charts_->setSources(sources, false);
  });
  connect(charts_, &ChartsPanel::backToLiveRequested, this, &RunViewer::showLive);
}

void RunViewer::showLive() {
  opener_->cancel();
  if (controller_->runDirectory().isEmpty()) {
    charts_->setSources({}, true);
    return;
  }
  charts_->setSources({{QFileInfo(controller_->runDirectory()).fileName(), controller_->store()}},
                      true);
}

void RunViewer::open(const QStringList& paths) {
  opener_->open(paths, controller_->isActive() ? controller_->runDirectory() : QString(),
                controller_->store());
}

ComparisonWindow* RunViewer::compare(const QStringList& paths) {
  auto* window = new ComparisonWindow(window_);
  window->setWindowFlag(Qt::Window);  // a window of its own, closed with the main one
  window->setAttribute(Qt::WA_DeleteOnClose);
  connect(window, &ComparisonWindow::message, this, &RunViewer::message);
  window->load(paths);
  fitToScreen(window);
  window->show();
  return window;
}

}  // namespace ddpdesk

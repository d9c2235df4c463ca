#include "charts/shown_runs.h"

#include <QFileInfo>
#include <QWidget>

#include "charts/charts_panel.h"
#include "compare/comparison_window.h"
#include "history/past_run_loader.h"
#include "run/run_controller.h"
#include "window/screen_fit.h"

namespace ddpdesk {

ShownRuns::ShownRuns(RunController* controller, ChartsPanel* charts, QWidget* window)
    : QObject(window),
      controller_(controller),
      charts_(charts),
      window_(window),
      opener_(new PastRunLoader(this)) {
  connect(opener_, &PastRunLoader::opening, charts_, &ChartsPanel::setOpening);
  connect(opener_, &PastRunLoader::problems, this, &ShownRuns::message);
  connect(opener_, &PastRunLoader::opened, this, [this](const ChartSources& sources) {
    if (sources.empty())
      charts_->setOpening({});
    else
      charts_->setSources(sources, false);
  });
  connect(charts_, &ChartsPanel::backToLiveRequested, this, &ShownRuns::showLive);
}

void ShownRuns::showLive() {
  opener_->cancel();
  if (controller_->runDirectory().isEmpty()) {
    charts_->setSources({}, true);
    return;
  }
  charts_->setSources({{QFileInfo(controller_->runDirectory()).fileName(), controller_->store()}},
                      true);
}

void ShownRuns::open(const QStringList& paths) {
  opener_->open(paths, controller_->isActive() ? controller_->runDirectory() : QString(),
                controller_->store());
}

ComparisonWindow* ShownRuns::compare(const QStringList& paths) {
  auto* window = new ComparisonWindow(window_);
  window->setWindowFlag(Qt::Window);  // a window of its own, closed with the main one
  window->setAttribute(Qt::WA_DeleteOnClose);
  connect(window, &ComparisonWindow::message, this, &ShownRuns::message);
  window->load(paths);
  fitToScreen(window);
  window->show();
  return window;
}

}  // namespace ddpdesk

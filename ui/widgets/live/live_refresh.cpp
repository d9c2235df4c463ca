#include "live/live_refresh.h"

#include <QTableView>

#include "live/rank_table.h"
#include "live/run_status_strip.h"
#include "run/run_controller.h"

namespace ddpdesk {

LiveRefresh::LiveRefresh(RunController* controller, RunStatusStrip* controls,
                         RankTableModel* rankModel, QTableView* rankView,
                         const StragglerWatch* stragglers, QObject* parent)
    : QObject(parent),
      controller_(controller),
      controls_(controls),
      rankModel_(rankModel),
      rankView_(rankView),
      stragglers_(stragglers) {
  timer_.setInterval(250);
  connect(&timer_, &QTimer::timeout, this, &LiveRefresh::refreshNow);
  timer_.start();
}

void LiveRefresh::refreshNow() {
  controls_->refresh(*controller_);
  rankModel_->setRows(buildRankRows(controller_->ranks(), *controller_->store(), stragglers_));
  for (const int c :
       {RankTableModel::GpuUtil, RankTableModel::GpuMemory, RankTableModel::GpuAllocator})
    rankView_->setColumnHidden(c, !rankModel_->hasGpu());
}

}  // namespace ddpdesk

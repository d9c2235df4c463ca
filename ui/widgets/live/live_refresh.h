// LiveRefresh: a few times a second, the controls strip (state, elapsed, progress, ETA) and the
// rank table redrawn from the controller and its store; the table's GPU columns only while some
// rank has a GPU.
#pragma once

#include <QObject>
#include <QTimer>

class QTableView;

namespace ddpdesk {

class RankTableModel;
class RunController;
class RunStatusStrip;
class StragglerWatch;

class LiveRefresh : public QObject {
  Q_OBJECT
 public:
  LiveRefresh(RunController* controller, RunStatusStrip* controls, RankTableModel* rankModel,
              QTableView* rankView, const StragglerWatch* stragglers, QObject* parent = nullptr);

  void refreshNow();

 private:
  RunController* controller_;
  RunStatusStrip* controls_;
  RankTableModel* rankModel_;
  QTableView* rankView_;
  const StragglerWatch* stragglers_;
  QTimer timer_;
};

}  // namespace ddpdesk

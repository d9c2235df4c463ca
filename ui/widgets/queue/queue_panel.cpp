#include "queue/queue_panel.h"

#include <QCheckBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "queue/run_queue.h"

namespace ddpdesk {

QueueTableModel::QueueTableModel(RunQueue* queue, QObject* parent)
    : QAbstractTableModel(parent), queue_(queue) {
  connect(queue_, &RunQueue::changed, this, [this] {
    beginResetModel();
    endResetModel();
  });
}

int QueueTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(queue_->entries().size());
}

int QueueTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant QueueTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const QueueEntry& e = queue_->entries()[index.row()];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Id:
        return e.id;
      case State:
        return QueueEntry::stateName(e.state);
      case Run:
        return e.label();
      case Directory:
        return QFileInfo(e.runDir).fileName();
      case Reason:
        return e.reason;
    }
  }
  if (role == Qt::ToolTipRole && index.column() == Directory) return e.runDir;
  if (role == Qt::ToolTipRole && index.column() == State &&
      e.state == QueueEntry::State::Interrupted)
    return tr(
        "The app was closed or died while this run trained; it continues from its "
        "checkpoint when the queue resumes");
  return {};
}

QVariant QueueTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Id:
      return tr("#");
    case State:
      return tr("State");
    case Run:
      return tr("Run");
    case Directory:
      return tr("Run directory");
    case Reason:
      return tr("Reason");
  }
  return {};
}

QueuePanel::QueuePanel(RunQueue* queue, QWidget* parent)
    : QWidget(parent), queue_(queue), model_(new QueueTableModel(queue, this)) {
  view_ = new QTableView(this);
  view_->setModel(model_);
  view_->verticalHeader()->setVisible(false);
  view_->horizontalHeader()->setSectionResizeMode(QueueTableModel::Run, QHeaderView::Stretch);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);

  add_ = new QPushButton(tr("Add current spec"), this);
  add_->setToolTip(tr("Queue the run form's spec: it starts when the runs before it are done"));
  sweep_ = new QPushButton(tr("Sweep…"), this);
  sweep_->setToolTip(tr("Queue a grid of runs around the run form's spec"));
  up_ = new QPushButton(tr("Up"), this);
  down_ = new QPushButton(tr("Down"), this);
  remove_ = new QPushButton(tr("Remove"), this);
  pause_ = new QPushButton(this);
  stopOnFailure_ = new QCheckBox(tr("Stop on failure"), this);
  stopOnFailure_->setToolTip(tr("A failed run pauses the queue (otherwise the next one starts)"));
  summary_ = new QLabel(this);

  auto* buttons = new QHBoxLayout;
  for (QPushButton* b : {add_, sweep_, up_, down_, remove_, pause_}) buttons->addWidget(b);
  buttons->addStretch(1);
  // The policy and the count on a row of their own: one row of everything would hold the
  // window wider than a small screen.
  auto* status = new QHBoxLayout;
  status->addWidget(stopOnFailure_);
  status->addStretch(1);
  status->addWidget(summary_);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->addLayout(buttons);
  v->addLayout(status);
  v->addWidget(view_, 1);

  connect(add_, &QPushButton::clicked, this, &QueuePanel::addRequested);
  connect(sweep_, &QPushButton::clicked, this, &QueuePanel::sweepRequested);
  connect(up_, &QPushButton::clicked, this, [this] { moveSelected(-1); });
  connect(down_, &QPushButton::clicked, this, [this] { moveSelected(+1); });
  connect(remove_, &QPushButton::clicked, this, [this] { queue_->remove(selectedId()); });
  connect(pause_, &QPushButton::clicked, this, [this] { queue_->setPaused(!queue_->isPaused()); });
  connect(stopOnFailure_, &QCheckBox::toggled, queue_, &RunQueue::setStopOnFailure);
  connect(queue_, &RunQueue::changed, this, &QueuePanel::refresh);
  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &QueuePanel::refresh);
  refresh();
}

int QueuePanel::selectedId() const {
  const QModelIndexList rows = view_->selectionModel()->selectedRows();
  if (rows.isEmpty() || rows.first().row() >= int(queue_->entries().size())) return -1;
  return queue_->entries()[rows.first().row()].id;
}

void QueuePanel::selectId(int id) {
  const int row = queue_->indexOf(id);
  if (row >= 0) view_->selectRow(row);
}

void QueuePanel::moveSelected(int by) {
  const int id = selectedId();
  if (queue_->move(id, queue_->indexOf(id) + by)) selectId(id);
}

void QueuePanel::refresh() {
  const int id = selectedId();
  const int row = queue_->indexOf(id);
  const int count = int(queue_->entries().size());
  up_->setEnabled(row > 0);
  down_->setEnabled(row >= 0 && row + 1 < count);
  remove_->setEnabled(row >= 0 && id != queue_->currentId());
  pause_->setText(queue_->isPaused() ? tr("Resume queue") : tr("Pause queue"));
  pause_->setToolTip(queue_->isPaused()
                         ? tr("Start the next waiting run (an interrupted or stopped one "
                              "continues from its checkpoint)")
                         : tr("Let the running run finish, start no other"));
  const QSignalBlocker block(stopOnFailure_);
  stopOnFailure_->setChecked(queue_->stopOnFailure());
  summary_->setText(tr("%1 waiting%2")
                        .arg(queue_->pendingCount())
                        .arg(queue_->isPaused() ? tr(", paused") : QString()));
}

}  // namespace ddpdesk

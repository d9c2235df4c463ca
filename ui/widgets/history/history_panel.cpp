#include "history/history_panel.h"

#include <QBrush>
#include <QColor>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>

#include "run/progress_text.h"

namespace ddpdesk {

void RunHistoryModel::setRecords(std::vector<RunRecord> records) {
  beginResetModel();
  records_ = std::move(records);
  endResetModel();
}

const RunRecord* RunHistoryModel::record(int row) const {
  return row >= 0 && row < int(records_.size()) ? &records_[row] : nullptr;
}

int RunHistoryModel::rowOf(const QString& path) const {
  const QString want = QDir(path).absolutePath();
  for (int i = 0; i < int(records_.size()); ++i)
    if (QDir(records_[i].path).absolutePath() == want) return i;
  return -1;
}

QString RunHistoryModel::stateText(const RunRecord& r) {
  if (!r.monitor.isEmpty()) return tr("active (%1)").arg(r.monitor);
  if (!r.status) return tr("active / interrupted");
  // A run that recovered by itself says so (docs/recovery.md).
  if (r.status->restarts > 0)
    return r.status->restarts == 1
               ? tr("%1 (1 restart)").arg(r.status->state)
               : tr("%1 (%2 restarts)").arg(r.status->state).arg(r.status->restarts);
  return r.status->state;
}

bool RunHistoryModel::canResume(const RunRecord& r) {
  if (!r.specValid || r.checkpoints.isEmpty()) return false;
  if (!r.monitor.isEmpty()) return false;  // its run is still going, in that monitor
  return !r.status || r.status->state != QLatin1String("Finished");
}

int RunHistoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(records_.size());
}

int RunHistoryModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunHistoryModel::data(const QModelIndex& index, int role) const {
  const RunRecord* r = record(index.row());
  if (!r) return {};
  if (role == Qt::ToolTipRole)
    return r->status && !r->status->reason.isEmpty()
               ? r->path + QStringLiteral("\n") + r->status->reason
               : r->path;
  if (role == Qt::ForegroundRole && r->status && r->status->state == QLatin1String("Failed"))
    return QBrush(QColor(192, 57, 43));
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Run:
      return r->id;
    case Task:
      return r->specValid ? QString::fromStdString(r->spec.task + " / " + r->spec.device)
                          : QString();
    case Ranks:
      return r->specValid ? QVariant(r->spec.world_size()) : QVariant();
    case Batch:
      return r->specValid ? QVariant(qlonglong(r->spec.effective_batch())) : QVariant();
    case State:
      return stateText(*r);
    case Steps:
      if (!r->status) return {};
      return r->status->totalSteps > 0
                 ? QStringLiteral("%1 / %2").arg(r->status->lastStep).arg(r->status->totalSteps)
                 : QString::number(r->status->lastStep);
    case Loss:
      return r->status ? formatLoss(r->status->lastLoss) : QString();
    case Started:
      return (r->status && r->status->startedAt.isValid() ? r->status->startedAt : r->created)
          .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
  }
  return {};
}

QVariant RunHistoryModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"run",   "task",  "ranks",     "global batch",
                                "state", "steps", "last loss", "started"};
  return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

HistoryPanel::HistoryPanel(QWidget* parent)
    : QWidget(parent), root_(RunDirectory::runsRoot()), model_(new RunHistoryModel(this)) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout();
  auto* refreshButton = new QPushButton(tr("Refresh"), this);
  refreshButton->setObjectName(QStringLiteral("refreshHistory"));
  connect(refreshButton, &QPushButton::clicked, this, &HistoryPanel::refresh);
  open_ = new QPushButton(tr("Open"), this);
  open_->setObjectName(QStringLiteral("openRun"));
  open_->setToolTip(tr("Show the selected run's charts; select several to overlay them"));
  connect(open_, &QPushButton::clicked, this, [this] {
    const QStringList paths = selectedPaths();
    if (!paths.isEmpty()) Q_EMIT openRequested(paths);
  });
  resume_ = new QPushButton(tr("Resume"), this);
  resume_->setObjectName(QStringLiteral("resumeRun"));
  resume_->setToolTip(tr("Continue the selected run from its last checkpoint"));
  connect(resume_, &QPushButton::clicked, this, [this] {
    const QStringList paths = selectedPaths();
    if (paths.size() == 1) Q_EMIT resumeRequested(paths.front());
  });
  compare_ = new QPushButton(tr("Compare"), this);
  compare_->setObjectName(QStringLiteral("compareRuns"));
  compare_->setToolTip(
      tr("Compare the selected runs side by side: curves, a table of what differs, and the "
         "difference of two curves"));
  connect(compare_, &QPushButton::clicked, this, [this] {
    const QStringList paths = selectedPaths();
    if (paths.size() > 1) Q_EMIT compareRequested(paths);
  });
  auto* tensorBoard = new QPushButton(tr("Open TensorBoard log…"), this);
  tensorBoard->setObjectName(QStringLiteral("openTensorBoard"));
  tensorBoard->setToolTip(
      tr("Overlay a series of a TensorBoard log directory (PyTorch's SummaryWriter, say) on the "
         "loss chart, x = step"));
  connect(tensorBoard, &QPushButton::clicked, this, &HistoryPanel::tensorBoardRequested);
  bar->addWidget(refreshButton);
  bar->addWidget(open_);
  bar->addWidget(resume_);
  bar->addWidget(compare_);
  bar->addWidget(tensorBoard);
  detail_ = new QLabel(this);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bar->addWidget(detail_, 1);
  v->addLayout(bar);

  view_ = new QTableView(this);
  view_->setModel(model_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  view_->verticalHeader()->setVisible(false);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setAlternatingRowColors(true);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  connect(view_, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
    if (const RunRecord* r = model_->record(i.row())) Q_EMIT openRequested({r->path});
  });
  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &HistoryPanel::updateButtons);
  v->addWidget(view_, 1);
  updateButtons();
}

void HistoryPanel::setActiveRun(const QString& path) {
  active_ = path;
  updateButtons();
}

void HistoryPanel::refresh() {
  const QStringList selected = selectedPaths();
  model_->setRecords(RunDirectory::listRuns(root_));
  view_->resizeColumnsToContents();
  selectPaths(selected);
  updateButtons();
}

QStringList HistoryPanel::selectedPaths() const {
  QStringList out;
  for (const QModelIndex& i : view_->selectionModel()->selectedRows())
    if (const RunRecord* r = model_->record(i.row())) out << r->path;
  return out;
}

void HistoryPanel::selectPaths(const QStringList& paths) {
  QItemSelection sel;
  for (const QString& p : paths) {
    const int row = model_->rowOf(p);
    if (row >= 0)
      sel.select(model_->index(row, 0), model_->index(row, RunHistoryModel::ColumnCount - 1));
  }
  view_->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect);
}

void HistoryPanel::updateButtons() {
  const QStringList paths = selectedPaths();
  open_->setEnabled(!paths.isEmpty());
  open_->setText(paths.size() > 1 ? tr("Overlay %1 runs").arg(paths.size()) : tr("Open"));
  compare_->setEnabled(paths.size() > 1);
  bool resumable = false;
  QString detail;
  if (paths.size() == 1) {
    const RunRecord* r = model_->record(model_->rowOf(paths.front()));
    const bool isActive =
        !active_.isEmpty() && QDir(active_).absolutePath() == QDir(paths.front()).absolutePath();
    resumable = r && !isActive && RunHistoryModel::canResume(*r);
    if (r && !r->monitor.isEmpty())
      detail = tr("Still running, watched by %1: stop it there to resume it").arg(r->monitor);
    else if (r && r->status && !r->status->reason.isEmpty())
      detail = r->status->reason.section(QLatin1Char('\n'), 0, 0);
  }
  resume_->setEnabled(resumable && active_.isEmpty());
  detail_->setText(detail);
}

}  // namespace ddpdesk

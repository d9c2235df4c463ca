#include "live/rank_table.h"

#include <QBrush>
#include <QColor>
#include <algorithm>
#include <cmath>

#include "headless/system_text.h"
#include "metrics/metrics_store.h"
#include "metrics/step_breakdown.h"
#include "metrics/straggler_watch.h"
#include "run/progress_text.h"
#include "system_gauges.h"

namespace ddpdesk {
namespace {

QString stateOf(const RunController::RankState* p, const RankInfo& info, bool* failed) {
  const QString ev = info.lastEvent;
  if (p && p->exited) {
    const bool ok = !p->crashed && p->exitCode == 0;
    if (ok && ev == QLatin1String("finished")) return QStringLiteral("finished");
    if (ok && ev == QLatin1String("stopped")) return QStringLiteral("stopped");
    if (ok) return QStringLiteral("exited");
    *failed = true;
    return QStringLiteral("failed");
  }
  if (p && !p->running && p->pid == 0) return QStringLiteral("not started");
  if (p && !p->connected && info.step == 0) return QStringLiteral("starting");
  if (ev == QLatin1String("stopping") || ev == QLatin1String("stopped") ||
      ev == QLatin1String("finished"))
    return ev;
  if (!info.error.isEmpty()) {
    *failed = true;
    return QStringLiteral("error");
  }
  if (p && !p->silence.isEmpty()) return p->silence;  // a followed rank gone quiet
  return info.seen || (p && p->running) ? QStringLiteral("running") : QString();
}

}  // namespace

std::vector<RankRow> buildRankRows(const std::vector<RunController::RankState>& ranks,
                                   const MetricsStore& store, const StragglerWatch* stragglers) {
  std::vector<RankRow> rows;
  const int n = ranks.empty() ? store.rankCount() : int(ranks.size());
  const int world = std::max(1, std::max(n, store.rankCount()));
  for (int r = 0; r < n; ++r) {
    const RunController::RankState* p = ranks.empty() ? nullptr : &ranks[r];
    const RankInfo& info = store.rankInfo(r);
    RankRow row;
    row.rank = r;
    row.pid = p && p->pid ? p->pid : info.pid;
    row.device = info.device;
    row.state = stateOf(p, info, &row.failed);
    row.step = info.step;
    row.loss = info.loss;
    row.samplesPerSec = info.training.perRankSamplesPerSec(world);
    if (p && p->exited)
      row.exitCode =
          p->crashed ? QStringLiteral("signal %1").arg(p->signal) : QString::number(p->exitCode);
    if (const auto t = store.breakdown(r).latest()) {
      row.computeMs = computeMs(*t);
      row.waitMs = waitMs(*t);
      row.syncEfficiency = syncEfficiency(*t);
    }
    if (stragglers) row.straggler = stragglers->explanation(r);
    const GaugeSet& g = store.gauges();
    row.cpuPercent = g.latest(r, gauges::kCpuPercent);
    row.rssBytes = g.latest(r, gauges::kRssBytes);
    row.gpuUtilPercent = g.latest(r, gauges::kGpuUtilPercent);
    row.gpuMemoryUsedBytes = g.latest(r, gauges::kGpuMemoryUsedBytes);
    row.gpuMemoryTotalBytes = g.latest(r, gauges::kGpuMemoryTotalBytes);
    row.gpuAllocatedBytes = g.latest(r, gauges::kGpuAllocatedBytes);
    row.gpuReservedBytes = g.latest(r, gauges::kGpuReservedBytes);
    row.gpuPeakBytes = g.latest(r, gauges::kGpuPeakBytes);
    rows.push_back(row);
  }
  return rows;
}

void RankTableModel::setRows(std::vector<RankRow> rows) {
  if (rows.size() != rows_.size()) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
    return;
  }
  rows_ = std::move(rows);
  if (!rows_.empty())
    Q_EMIT dataChanged(index(0, 0), index(int(rows_.size()) - 1, ColumnCount - 1));
}

bool RankTableModel::hasGpu() const {
  for (const RankRow& r : rows_)
    if (!std::isnan(r.gpuUtilPercent) || !std::isnan(r.gpuMemoryUsedBytes) ||
        !std::isnan(r.gpuAllocatedBytes))
      return true;
  return false;
}

int RankTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(rows_.size());
}

int RankTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant RankTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(rows_.size())) return {};
  const RankRow& r = rows_[index.row()];
  if (role == Qt::ForegroundRole && r.failed) return QBrush(QColor(192, 57, 43));
  // A straggler's row in amber, like the banner above the charts; hover for why.
  if (role == Qt::BackgroundRole && !r.straggler.isEmpty()) return QBrush(QColor(255, 228, 160));
  if (role == Qt::ToolTipRole && !r.straggler.isEmpty()) return r.straggler;
  if (role == Qt::TextAlignmentRole)
    return index.column() == State || index.column() == Device
               ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
               : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Rank:
      return r.rank;
    case Pid:
      return r.pid ? QVariant(r.pid) : QVariant(QString());
    case Device:
      return r.device;
    case State:
      return r.state;
    case Step:
      return r.step;
    case Loss:
      return formatLoss(r.loss);
    case SamplesPerSec:
      return QString::number(r.samplesPerSec, 'f', 0);
    case ComputeMs:
      return std::isnan(r.computeMs) ? QString() : QString::number(r.computeMs, 'f', 1);
    case WaitMs:
      return std::isnan(r.waitMs) ? QString() : QString::number(r.waitMs, 'f', 1);
    case SyncEfficiency:
      return std::isnan(r.syncEfficiency)
                 ? QString()
                 : QString::number(std::lround(r.syncEfficiency * 100)) + QLatin1Char('%');
    case CpuPercent:
      return std::isnan(r.cpuPercent) ? QString() : QString::number(r.cpuPercent, 'f', 0);
    case Rss:
      return formatBytes(r.rssBytes);
    case GpuUtil:
      return std::isnan(r.gpuUtilPercent) ? QString() : QString::number(r.gpuUtilPercent, 'f', 0);
    case GpuMemory:
      if (std::isnan(r.gpuMemoryUsedBytes)) return QString();
      if (std::isnan(r.gpuMemoryTotalBytes)) return formatBytes(r.gpuMemoryUsedBytes);
      return QStringLiteral("%1 / %2").arg(formatBytes(r.gpuMemoryUsedBytes),
                                           formatBytes(r.gpuMemoryTotalBytes));
    case GpuAllocator: {
      if (std::isnan(r.gpuAllocatedBytes)) return QString();
      QString text = formatBytes(r.gpuAllocatedBytes);
      if (!std::isnan(r.gpuReservedBytes))
        text += QStringLiteral(" / ") + formatBytes(r.gpuReservedBytes);
      if (!std::isnan(r.gpuPeakBytes))
        text += QStringLiteral(" (peak %1)").arg(formatBytes(r.gpuPeakBytes));
      return text;
    }
    case ExitCode:
      return r.exitCode;
  }
  return {};
}

QVariant RankTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  static const char* names[] = {
      "rank",    "pid",       "device", "state", "step",  "last loss",  "samples/s",   "compute ms",
      "wait ms", "sync eff.", "CPU %",  "RSS",   "GPU %", "GPU memory", "GPU tensors", "exit code"};
  if (role == Qt::DisplayRole && section >= 0 && section < ColumnCount) return tr(names[section]);
  if (role == Qt::ToolTipRole && section == SamplesPerSec)
    return tr(
        "This rank's own average training throughput over the run so far: the samples it "
        "trained per second of its own optimizer steps (evaluation and checkpoints left out)");
  if (role == Qt::ToolTipRole && section == ComputeMs)
    return tr(
        "Its own work per optimizer step (data, forward, backward, optimizer), latest "
        "log interval");
  if (role == Qt::ToolTipRole && section == WaitMs)
    return tr(
        "Time per step blocked on communication with the other ranks (what backward did "
        "not hide), latest log interval");
  if (role == Qt::ToolTipRole && section == CpuPercent)
    return tr("The rank's process, latest sample (about one a second): 100 = one core busy");
  if (role == Qt::ToolTipRole && section == Rss)
    return tr("The rank's resident memory, latest sample");
  if (role == Qt::ToolTipRole && section == GpuUtil)
    return tr("Share of the last sample period in which a kernel ran on the rank's GPU (NVML)");
  if (role == Qt::ToolTipRole && section == GpuMemory)
    return tr("Memory in use on the rank's GPU, by every process, of its total (NVML)");
  if (role == Qt::ToolTipRole && section == GpuAllocator)
    return tr(
        "LibTorch's CUDA caching allocator in the rank: memory held by tensors / reserved from the "
        "driver (its cache included), and the most ever held by tensors at once (peak)");
  if (role == Qt::ToolTipRole && section == SyncEfficiency)
    return tr("Compute / step time: below 100% the rank waits for others (or for the network)");
  return {};
}

}  // namespace ddpdesk

// The rank table: one row per rank with pid, device, state, step, last loss, samples/s, the step
// breakdown's compute, wait and sync efficiency, and exit code, from the controller's process view
// and the store's metrics view of the same rank. A straggler's row is highlighted.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <limits>
#include <vector>

#include "run/run_controller.h"

namespace ddpdesk {

class MetricsStore;
class StragglerWatch;

struct RankRow {
  int rank = 0;
  qint64 pid = 0;
  QString device;
  QString state;  // not started, starting, running, stopping, finished, stopped, failed, exited
  qint64 step = 0;
  double loss = 0;           // NaN before the first step
  double samplesPerSec = 0;  // its own average training throughput so far (RankAverageThroughput)
  QString exitCode;          // "0", "3", "signal 9", or empty while running
  bool failed = false;
  // From the latest step breakdown (NaN without one): ms per step, and compute / step.
  double computeMs = std::numeric_limits<double>::quiet_NaN();
  double waitMs = std::numeric_limits<double>::quiet_NaN();
  double syncEfficiency = std::numeric_limits<double>::quiet_NaN();
  QString straggler;  // the straggler detector's explanation while the rank is flagged
  // The latest system gauges (NaN when the rank sent none): CPU % (100 = one core), resident
  // memory, and on a CUDA rank its GPU's utilisation and memory.
  double cpuPercent = std::numeric_limits<double>::quiet_NaN();
  double rssBytes = std::numeric_limits<double>::quiet_NaN();
  double gpuUtilPercent = std::numeric_limits<double>::quiet_NaN();
  double gpuMemoryUsedBytes = std::numeric_limits<double>::quiet_NaN();
  double gpuMemoryTotalBytes = std::numeric_limits<double>::quiet_NaN();
  // A ddpdesk CUDA worker's caching allocator (NaN otherwise): held by tensors, reserved from the
  // driver, the most held at once.
  double gpuAllocatedBytes = std::numeric_limits<double>::quiet_NaN();
  double gpuReservedBytes = std::numeric_limits<double>::quiet_NaN();
  double gpuPeakBytes = std::numeric_limits<double>::quiet_NaN();
};

// Pure: one row per rank of the controller (or per rank the store knows, when there is no
// process view, as for a run loaded from disk). `stragglers` (optional) marks flagged ranks.
std::vector<RankRow> buildRankRows(const std::vector<RunController::RankState>& ranks,
                                   const MetricsStore& store,
                                   const StragglerWatch* stragglers = nullptr);

class RankTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Rank,
    Pid,
    Device,
    State,
    Step,
    Loss,
    SamplesPerSec,
    ComputeMs,       // step breakdown: data + forward + backward + optimizer
    WaitMs,          // step breakdown: exposed communication
    SyncEfficiency,  // compute / step
    CpuPercent,      // system gauges
    Rss,
    GpuUtil,  // only shown when some rank has a GPU (hasGpu())
    GpuMemory,
    GpuAllocator,  // the caching allocator's allocated / reserved (peak)
    ExitCode,
    ColumnCount
  };
  using QAbstractTableModel::QAbstractTableModel;

  void setRows(std::vector<RankRow> rows);
  const std::vector<RankRow>& rows() const { return rows_; }
  // Whether any row has GPU values: the view hides the GPU columns otherwise.
  bool hasGpu() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<RankRow> rows_;
};

}  // namespace ddpdesk

#include "charts/system_chart.h"

#include <qcustomplot.h>
#include <QLabel>
#include <algorithm>

#include "metrics/metrics_store.h"
#include "system_gauges.h"

namespace ddpdesk {
namespace {

struct Quantity {
  const char* gauge;
  const char* label;
  bool memory;  // right axis, in MiB, dashed
};
// Legend order: a quantity for every rank, then the next quantity.
constexpr Quantity kQuantities[] = {
    {gauges::kCpuPercent, "CPU %", false},
    {gauges::kRssBytes, "RSS", true},
    {gauges::kGpuUtilPercent, "GPU %", false},
    {gauges::kGpuMemoryUsedBytes, "GPU mem", true},
    {gauges::kGpuProcessMemoryBytes, "GPU mem (rank)", true},
    {gauges::kGpuAllocatedBytes, "GPU allocated", true},
    {gauges::kGpuReservedBytes, "GPU reserved", true},
    {gauges::kGpuPeakBytes, "GPU peak", true},
};
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

SystemChart::SystemChart(QWidget* parent)
    : SeriesChart(tr("System"), tr("CPU % (100 = one core)"), parent) {
  plot()->yAxis2->setLabel(tr("memory (MiB)"));
  note_ = new QLabel(tr("No run"), plot());
  note_->setObjectName(QStringLiteral("systemNote"));
  note_->setStyleSheet(QStringLiteral("color: #808080;"));
  note_->setAttribute(Qt::WA_TransparentForMouseEvents);
  note_->move(60, 40);
  note_->adjustSize();
}

QString SystemChart::curveName(int rank, const char* gauge) {
  for (const Quantity& q : kQuantities)
    if (std::string_view(q.gauge) == gauge)
      return QStringLiteral("rank %1 %2").arg(rank).arg(QLatin1String(q.label));
  return QStringLiteral("rank %1 %2").arg(rank).arg(QLatin1String(gauge));
}

bool SystemChart::showsNote() const {
  return !note_->isHidden();
}

QString SystemChart::noteText() const {
  return note_->text();
}

std::vector<CurveDef> SystemChart::layout() const {
  std::vector<CurveDef> out;
  const ChartSources& src = sources();
  const bool overlay = runCount(src) > 1;  // an imported series (no gauges) is not a run
  for (const Quantity& q : kQuantities)
    for (int s = 0; s < int(src.size()); ++s) {
      if (!src[s].store || src[s].imported) continue;
      const GaugeSet& gauges = src[s].store->gauges();
      for (int r = 0; r < gauges.rankCount(); ++r) {
        if (!gauges.find(r, q.gauge)) continue;
        CurveDef d;
        d.id = QStringLiteral("s%1/%2/%3").arg(s).arg(QLatin1String(q.gauge)).arg(r);
        d.name = overlay ? src[s].label + QLatin1Char(' ') + curveName(r, q.gauge)
                         : curveName(r, q.gauge);
        d.source = s;
        d.kind = CurveDef::Kind::Gauge;
        d.rank = r;
        d.gauge = q.gauge;
        d.scale = q.memory ? 1.0 / kMiB : 1.0;
        d.rightAxis = q.memory;
        // A rank's colour, or a run's when runs are overlaid; memory dashed beside its CPU.
        d.style.color = paletteColor(overlay ? s : r);
        d.style.smoothable = false;  // samples a second apart: smoothing would only lag
        d.style.pen = q.memory ? Qt::DashLine : Qt::SolidLine;
        out.push_back(d);
      }
    }
  // layout() runs whenever a store changed: the note, the axis label and the legend follow what
  // there is to draw. The legend gets a row per quantity (a column per rank, up to 4): in one
  // row it ran past the chart's width.
  if (out.empty()) {
    // Say which it is: nothing to show yet, or a run that reports no system metrics.
    bool anyRun = false, anySteps = false;
    for (const ChartSource& c : src) {
      if (!c.store || c.imported) continue;
      anyRun = true;
      for (int r = 0; r < c.store->rankCount(); ++r)
        anySteps = anySteps || c.store->rankSeries(r).size() > 0;
    }
    note_->setText(!anyRun     ? tr("No run")
                   : !anySteps ? tr("No system metrics yet")
                               : tr("No system metrics in this run"));
    note_->adjustSize();
  }
  note_->setVisible(out.empty());
  int ranks = 1;
  bool gpu = false;
  for (const CurveDef& d : out) {
    ranks = std::max(ranks, d.rank + 1);
    gpu = gpu || d.gauge.rfind("gpu_", 0) == 0;
  }
  plot()->yAxis->setLabel(gpu ? tr("CPU / GPU %") : tr("CPU % (100 = one core)"));
  const int wrap = std::min(ranks, 4);
  if (plot()->legend->wrap() != wrap) {
    plot()->legend->setWrap(wrap);
    plot()->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
  }
  return out;
}

}  // namespace ddpdesk

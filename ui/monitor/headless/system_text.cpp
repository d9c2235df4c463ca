#include "headless/system_text.h"

#include <QtNumeric>
#include <cmath>
#include <limits>
#include <vector>

#include "system_gauges.h"

namespace ddpdesk {
namespace {

double peak(const GaugeSet& g, int rank, const char* name) {
  const GaugeSeries* s = g.find(rank, name);
  return s ? s->max() : qQNaN();
}

double mean(const GaugeSet& g, int rank, const char* name) {
  const GaugeSeries* s = g.find(rank, name);
  return s ? s->mean() : qQNaN();
}

QString percent(double p) {
  return std::isnan(p) ? QStringLiteral("-") : QString::number(p, 'f', 1);
}

QString bytesOrDash(double b) {
  const QString s = formatBytes(b);
  return s.isEmpty() ? QStringLiteral("-") : s;
}

}  // namespace

QString formatBytes(double bytes) {
  if (!(bytes >= 0)) return {};
  const double kib = bytes / 1024.0, mib = kib / 1024.0, gib = mib / 1024.0;
  if (gib >= 1.0) return QStringLiteral("%1 GiB").arg(gib, 0, 'f', 2);
  if (mib >= 1.0) return QStringLiteral("%1 MiB").arg(mib, 0, 'f', 0);
  return QStringLiteral("%1 KiB").arg(kib, 0, 'f', 0);
}

SystemUse systemUse(const GaugeSet& gauges, int rank) {
  return {peak(gauges, rank, gauges::kRssBytes), mean(gauges, rank, gauges::kCpuPercent),
          peak(gauges, rank, gauges::kGpuMemoryUsedBytes),
          mean(gauges, rank, gauges::kGpuUtilPercent)};
}

QStringList formatSystemTable(const MetricsStore& store) {
  const GaugeSet& g = store.gauges();
  std::vector<SystemUse> use;
  bool any = false, gpu = false;
  for (int r = 0; r < g.rankCount(); ++r) {
    use.push_back(systemUse(g, r));
    any = any || !std::isnan(use.back().peakRssBytes) || !std::isnan(use.back().meanCpuPercent);
    gpu = gpu || !std::isnan(use.back().peakGpuMemoryBytes) ||
          !std::isnan(use.back().meanGpuUtilPercent);
  }
  if (!any && !gpu) return {};
  QStringList lines;
  QString head = QStringLiteral("%1 %2 %3")
                     .arg(QStringLiteral("rank"), -5)
                     .arg(QStringLiteral("peak RSS"), -12)
                     .arg(QStringLiteral("mean CPU %"), -12);
  if (gpu)
    head += QStringLiteral(" %1 %2")
                .arg(QStringLiteral("peak GPU mem"), -14)
                .arg(QStringLiteral("mean GPU %"));
  lines << head.trimmed();
  for (int r = 0; r < int(use.size()); ++r) {
    const SystemUse& u = use[std::size_t(r)];
    QString line = QStringLiteral("%1 %2 %3")
                       .arg(r, -5)
                       .arg(bytesOrDash(u.peakRssBytes), -12)
                       .arg(percent(u.meanCpuPercent), -12);
    if (gpu)
      line += QStringLiteral(" %1 %2")
                  .arg(bytesOrDash(u.peakGpuMemoryBytes), -14)
                  .arg(percent(u.meanGpuUtilPercent));
    lines << line.trimmed();
  }
  return lines;
}

}  // namespace ddpdesk

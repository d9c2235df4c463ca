#include "headless/breakdown_text.h"

#include <cmath>

#include "metrics/metrics_store.h"
#include "metrics/step_breakdown.h"

namespace ddpdesk {
namespace {

QString cell(double v, int width) {
  return QString::number(v, 'f', 2).rightJustified(width);
}

}  // namespace

QStringList formatBreakdownTable(const MetricsStore& store) {
  QStringList lines;
  for (int r = 0; r < store.rankCount(); ++r) {
    const auto avg = store.breakdown(r).average();
    if (!avg) continue;
    const double eff = syncEfficiency(*avg);
    lines << QStringLiteral("%1%2%3%4%5%6%7%8")
                 .arg(QString::number(r).leftJustified(5))
                 .arg(cell(avg->data, 8))
                 .arg(cell(avg->forward, 8))
                 .arg(cell(avg->backward, 8))
                 .arg(cell(avg->comm, 9))
                 .arg(cell(avg->optimizer, 8))
                 .arg(cell(avg->step, 9))
                 .arg((std::isnan(eff) ? QStringLiteral("n/a")
                                       : QString::number(std::lround(eff * 100)) + QLatin1Char('%'))
                          .rightJustified(11));
  }
  if (lines.isEmpty()) return lines;
  lines.prepend(
      QStringLiteral("rank  data ms  fwd ms  bwd ms  comm ms  opt ms  step ms  sync eff."));
  return lines;
}

}  // namespace ddpdesk

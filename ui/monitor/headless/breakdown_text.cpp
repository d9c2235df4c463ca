#include "headless/breakdown_text.h"

#include <cmath>
#include <utility>
#include <vector>

#include "metrics/metrics_store.h"
#include "metrics/step_breakdown.h"

namespace ddpdesk {
namespace {

QString cell(double v, int width) {
  return QString::number(v, 'f', 2).rightJustified(width);
}

}  // namespace

QStringList formatBreakdownTable(const MetricsStore& store) {
  std::vector<std::pair<int, wire::StepTimes>> rows;
  bool other = false;  // a training script's time outside its phases: a column of its own
  for (int r = 0; r < store.rankCount(); ++r)
    if (const auto avg = store.breakdown(r).average()) {
      rows.emplace_back(r, *avg);
      other = other || avg->other > 0;
    }
  QStringList lines;
  if (rows.empty()) return lines;
  lines << QStringLiteral("rank  data ms  fwd ms  bwd ms  comm ms  opt ms%1  step ms  sync eff.")
               .arg(other ? QStringLiteral("  other ms") : QString());
  const auto na = [](int width) { return QStringLiteral("n/a").rightJustified(width); };
  for (const auto& [r, avg] : rows) {
    const double eff = syncEfficiency(avg);
    lines << QStringLiteral("%1%2%3%4%5%6%7%8%9")
                 .arg(QString::number(r).leftJustified(5))
                 .arg(cell(avg.data, 8))
                 .arg(cell(avg.forward, 8))
                 .arg(cell(avg.backward, 8))
                 .arg(avg.comm_measured ? cell(avg.comm, 9) : na(9))
                 .arg(cell(avg.optimizer, 8))
                 .arg(other ? cell(avg.other, 10) : QString())
                 .arg(cell(avg.step, 9))
                 .arg(std::isnan(eff) ? na(11)
                                      : (QString::number(std::lround(eff * 100)) + QLatin1Char('%'))
                                            .rightJustified(11));
  }
  return lines;
}

}  // namespace ddpdesk

#include "run/progress_text.h"

#include <algorithm>
#include <cmath>

namespace ddpdesk {

QString formatDuration(double seconds) {
  if (!(seconds >= 0)) return QStringLiteral("?");
  const qint64 s = qint64(std::llround(seconds));
  if (s < 60) return QStringLiteral("%1s").arg(s);
  const qint64 h = s / 3600, m = (s / 60) % 60, sec = s % 60;
  if (h == 0) return QStringLiteral("%1:%2").arg(m).arg(sec, 2, 10, QChar('0'));
  return QStringLiteral("%1:%2:%3").arg(h).arg(m, 2, 10, QChar('0')).arg(sec, 2, 10, QChar('0'));
}

QString formatLoss(double loss) {
  if (std::isnan(loss)) return QStringLiteral("n/a");
  return QString::number(loss, 'g', 4);
}

QString formatProgressLine(const RunProgress& p, int totalEpochs) {
  // Workers count epochs from 0, people from 1.
  QString line = totalEpochs > 0 ? QStringLiteral("epoch %1/%2").arg(p.epoch + 1).arg(totalEpochs)
                                 : QStringLiteral("epoch %1").arg(p.epoch + 1);
  line += p.totalSteps > 0 ? QStringLiteral("  step %1/%2").arg(p.step).arg(p.totalSteps)
                           : QStringLiteral("  step %1").arg(p.step);
  line += QStringLiteral("  loss %1").arg(formatLoss(p.globalLoss));
  if (!std::isnan(p.evalLoss)) line += QStringLiteral("  val %1").arg(formatLoss(p.evalLoss));
  if (!std::isnan(p.evalAccuracy))
    line += QStringLiteral("  acc %1%").arg(p.evalAccuracy * 100.0, 0, 'f', 1);
  line += QStringLiteral("  %1 samples/s").arg(p.samplesPerSec, 0, 'f', 0);
  line += QStringLiteral("  ETA %1").arg(formatDuration(p.etaSeconds));
  return line;
}

QString formatThroughputLine(const MetricsStore& store) {
  const int world = std::max(1, store.progress().world);
  double sum = 0;
  int counted = 0;
  for (int r = 0; r < store.rankCount(); ++r) {
    const double rate = store.rankInfo(r).training.perRankSamplesPerSec(world);
    if (rate > 0) {
      sum += rate;
      ++counted;
    }
  }
  if (counted == 0) return {};
  QString line = QStringLiteral("training %1 samples/s per rank (%2 in all)")
                     .arg(sum / counted, 0, 'f', 0)
                     .arg(sum, 0, 'f', 0);
  const double eval = store.progress().evalSeconds;
  if (eval > 0)
    line += QStringLiteral("; evaluation %1")
                .arg(eval < 60 ? QStringLiteral("%1s").arg(eval, 0, 'f', 1) : formatDuration(eval));
  return line;
}

QString progressBarFormat(qint64 totalSteps, bool active) {
  if (totalSteps > 0) return QStringLiteral("step %v / %m  (%p%)");
  return active ? QStringLiteral("starting…") : QStringLiteral("no run");
}

QString startedDetail(const MetricsStore& store) {
  const wire::Event* latest = nullptr;
  for (const wire::Event& e : store.events()) {
    if (e.event != "started") continue;
    // The latest session is the one that started furthest on; of a session, the lowest rank.
    if (!latest || e.step > latest->step || (e.step == latest->step && e.rank < latest->rank))
      latest = &e;
  }
  return latest ? QString::fromStdString(latest->detail) : QString();
}

}  // namespace ddpdesk

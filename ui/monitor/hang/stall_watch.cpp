#include "hang/stall_watch.h"

#include <QElapsedTimer>
#include <algorithm>
#include <cmath>

namespace ddpdesk {

qint64 stallLimitMs(double collectiveTimeoutS, qint64 longestGapMs) {
  const qint64 half = qint64(std::llround(collectiveTimeoutS * 500.0));
  return std::max(half, 3 * longestGapMs);
}

StallWatch::StallWatch(QObject* parent) : QObject(parent) {
  auto elapsed = std::make_shared<QElapsedTimer>();
  elapsed->start();
  clock_ = [elapsed] { return elapsed->elapsed(); };
  timer_.setInterval(kCheckMs);
  connect(&timer_, &QTimer::timeout, this, &StallWatch::check);
}

void StallWatch::begin(int world, double collectiveTimeoutS) {
  ranks_.assign(std::max(0, world), Rank());
  timeout_s_ = collectiveTimeoutS;
  armed_ = false;
  last_step_ms_ = -1;
  longest_gap_ms_ = 0;
  said_all_ = false;
  watching_ = true;
  timer_.start();
}

void StallWatch::end() {
  watching_ = false;
  timer_.stop();
}

StallWatch::Rank& StallWatch::rank(int r) {
  if (r >= int(ranks_.size())) ranks_.resize(r + 1);
  return ranks_[r];
}

void StallWatch::heard(int r, bool step) {
  if (!watching_ || r < 0) return;
  // Armed by the run's first optimizer step: before it, a rank may legitimately take minutes
  // (loading data, torch.compile, CUDA's start) without a word.
  if (!armed_ && !step) return;
  const qint64 now = clock_();
  Rank& k = rank(r);
  // The run's own pace; not a stall already said (a hang that passed is no pace to wait for).
  if (k.last_ms >= 0 && !k.said && !said_all_)
    longest_gap_ms_ = std::max(longest_gap_ms_, now - k.last_ms);
  k.last_ms = now;
  armed_ = true;
  if (step) {
    k.stepped = true;
    k.said = false;
    last_step_ms_ = now;
    said_all_ = false;
  }
}

void StallWatch::check() {
  if (!watching_ || !armed_) return;
  const qint64 now = clock_();
  const qint64 limit = limitMs();
  const auto seconds = [](qint64 ms) { return QString::number(ms / 1000.0, 'f', 1); };
  const QString limitText =
      limit == stallLimitMs(timeout_s_, 0)
          ? QStringLiteral("half the collective timeout of %1 s").arg(timeout_s_)
          : QStringLiteral("three times the run's longest gap between reports, %1 s")
                .arg(seconds(longest_gap_ms_));
  if (!said_all_ && now - last_step_ms_ >= limit) {
    said_all_ = true;
    for (Rank& k : ranks_) k.said = true;  // the same stall
    Q_EMIT stalled(QStringLiteral("no optimizer step from any rank for %1 s (%2)")
                       .arg(seconds(now - last_step_ms_), limitText));
    return;
  }
  for (int r = 0; r < int(ranks_.size()); ++r) {
    Rank& k = ranks_[r];
    if (!k.stepped || k.said || now - k.last_ms < limit) continue;
    const bool othersHeard = std::any_of(ranks_.begin(), ranks_.end(), [&](const Rank& o) {
      return &o != &k && o.last_ms >= 0 && now - o.last_ms < limit;
    });
    if (!othersHeard) continue;
    k.said = true;
    Q_EMIT stalled(QStringLiteral("rank %1 has been silent for %2 s while the others step (%3)")
                       .arg(r)
                       .arg(seconds(now - k.last_ms), limitText));
  }
}

}  // namespace ddpdesk

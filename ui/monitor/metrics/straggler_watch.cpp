#include "metrics/straggler_watch.h"

#include <QElapsedTimer>
#include <QStringList>
#include <QTimer>
#include <algorithm>

#include "metrics/metrics_store.h"

namespace ddpdesk {
namespace {

// Intervals waiting for a rank that may never report (it died, or sends no breakdown): beyond
// this many, the oldest are given up.
constexpr std::size_t kMaxPending = 4096;
// Breakdowns taken from each rank per round, and the time one call may take before it leaves the
// rest to the next pass of the event loop.
constexpr std::size_t kRound = 64;
constexpr qint64 kSliceMs = 8;

bool complete(const std::vector<std::optional<wire::StepTimes>>& ranks) {
  return std::all_of(ranks.begin(), ranks.end(), [](const auto& t) { return t.has_value(); });
}

}  // namespace

StragglerWatch::StragglerWatch(QObject* parent) : QObject(parent) {}

void StragglerWatch::setStore(const MetricsStore* store) {
  disconnect(updatedConn_);
  disconnect(resetConn_);
  store_ = store;
  if (store) {
    updatedConn_ = connect(store, &MetricsStore::updated, this, &StragglerWatch::sync);
    resetConn_ = connect(store, &MetricsStore::reset, this, &StragglerWatch::restart);
  }
  restart();
  sync();
}

void StragglerWatch::setOptions(const StragglerOptions& options) {
  detector_ = StragglerDetector(options);
  restart();
  sync();
}

void StragglerWatch::restart() {
  const bool hadFlags = !detector_.flaggedRanks().empty();
  detector_.reset();
  cursor_.clear();
  pending_.clear();
  if (hadFlags) Q_EMIT changed();
}

void StragglerWatch::sync() {
  if (!store_) return;
  const int world = store_->rankCount();
  if (world < 2) return;
  if (int(cursor_.size()) < world) cursor_.resize(world, 0);
  for (auto& [step, ranks] : pending_) ranks.resize(world);

  // In rounds of a few breakdowns per rank, so the ranks move along together and the intervals
  // waiting for a rank stay few; a long run loaded from disk is taken in slices of the event
  // loop rather than in one go.
  QElapsedTimer clock;
  clock.start();
  bool any = false;
  for (;;) {
    bool gathered = false;
    bool anyComplete = false;
    std::int64_t newestComplete = 0;
    for (int r = 0; r < world; ++r) {
      const BreakdownSeries& b = store_->breakdown(r);
      const std::size_t end = std::min(b.size(), cursor_[r] + kRound);
      for (; cursor_[r] < end; ++cursor_[r]) {
        gathered = true;
        const auto step = std::int64_t(b.step[cursor_[r]]);
        auto& interval = pending_[step];
        interval.resize(world);
        interval[r] = b.at(cursor_[r]);
        if (complete(interval)) {
          newestComplete = anyComplete ? std::max(newestComplete, step) : step;
          anyComplete = true;
        }
      }
    }
    if (anyComplete) any = process(newestComplete) || any;
    while (pending_.size() > kMaxPending) pending_.erase(pending_.begin());
    if (!gathered) break;
    if (clock.elapsed() >= kSliceMs) {
      if (!more_) {
        more_ = true;
        QTimer::singleShot(0, this, [this] {
          more_ = false;
          sync();
        });
      }
      break;
    }
  }
  if (any) Q_EMIT changed();
}

bool StragglerWatch::process(std::int64_t newestComplete) {
  // In step order. Intervals older than the newest complete one that still miss a rank will not
  // complete any more (each rank reports its steps in order): they are dropped.
  bool any = false;
  while (!pending_.empty() && pending_.begin()->first <= newestComplete) {
    const auto node = pending_.extract(pending_.begin());
    if (!complete(node.mapped())) continue;
    for (const auto& c : detector_.addInterval(node.mapped())) {
      any = true;
      if (c.flagged)
        Q_EMIT flagged(c.rank, c.text);
      else
        Q_EMIT cleared(c.rank, c.text);
    }
    // A flagged rank's explanation follows each interval, so the banner is redrawn too.
    any = any || !detector_.flaggedRanks().empty();
  }
  return any;
}

QString StragglerWatch::summary() const {
  QStringList lines;
  for (int r : detector_.flaggedRanks()) lines << detector_.explanation(r);
  return lines.join(QLatin1Char('\n'));
}

}  // namespace ddpdesk

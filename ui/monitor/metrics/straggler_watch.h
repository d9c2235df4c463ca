// StragglerWatch: runs a StragglerDetector over a MetricsStore's step breakdowns as they arrive.
// Ranks report the same steps (every log interval) but their messages come in over separate
// connections, in any order; an interval is handed to the detector once every rank of the run has
// reported its breakdown for that step. Follows the store's updated() and reset(), so a live run
// and a metrics.jsonl loaded from disk are treated alike (a store whose messages carry no
// time_ms gives no intervals, and so no straggler).
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "metrics/straggler_detector.h"

namespace ddpdesk {

class MetricsStore;

class StragglerWatch : public QObject {
  Q_OBJECT
 public:
  explicit StragglerWatch(QObject* parent = nullptr);

  // Follows `store` from its current content on (nullptr: follows nothing). Forgets any flag.
  void setStore(const MetricsStore* store);
  void setOptions(const StragglerOptions& options);

  // Takes in whatever the store gained since the last call (the store's updated() calls it).
  // A backlog of many thousand intervals (a long run loaded from disk) is taken a slice at a
  // time, the rest from the event loop, so the thread is never held for long.
  void sync();

  bool isFlagged(int rank) const { return detector_.isFlagged(rank); }
  std::vector<int> flaggedRanks() const { return detector_.flaggedRanks(); }
  QString explanation(int rank) const { return detector_.explanation(rank); }
  // Every flagged rank's explanation, one per line; empty when there is no straggler.
  QString summary() const;
  const StragglerDetector& detector() const { return detector_; }

 Q_SIGNALS:
  void flagged(int rank, const QString& text);
  void cleared(int rank, const QString& text);
  // The set of flagged ranks or an explanation may have changed (also on reset).
  void changed();

 private:
  void restart();
  bool process(std::int64_t newestComplete);

  QPointer<const MetricsStore> store_;
  QMetaObject::Connection updatedConn_, resetConn_;
  StragglerDetector detector_;
  std::vector<std::size_t> cursor_;  // per rank: breakdowns already taken in
  // Intervals some ranks have reported and others not yet, by step.
  std::map<std::int64_t, std::vector<std::optional<wire::StepTimes>>> pending_;
  bool more_ = false;  // a call to take the rest is queued
};

}  // namespace ddpdesk

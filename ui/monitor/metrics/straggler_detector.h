// StragglerDetector: which rank holds the others up. Fed one log interval at a time (every rank's
// breakdown for the same step), it compares each rank's compute (data + forward + backward +
// optimizer) with the median of the other ranks' compute. A rank over that median by more than
// the margin (relative and absolute, both must be exceeded) for `intervals` intervals in a row,
// and for at least `minSeconds` of its own wall time over those intervals, is flagged; the flag
// clears after `intervals` intervals back in line. One slow interval (a page fault, a busy core)
// flags nothing, and neither do a few short ones: with a log interval of a few milliseconds,
// three intervals in a row are one hiccup of a shared machine, not a slow rank. Compute, not step
// time, is compared: in DDP every rank's step takes as long as the slowest one's, the fast ranks
// just spend the difference waiting in comm. Pure (no signals, no store): StragglerWatch feeds it
// from a MetricsStore.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>
#include <vector>

#include "wire.h"

namespace ddpdesk {

struct StragglerOptions {
  double margin = 0.20;  // over the others' median by more than this fraction of it ...
  double minMs = 1.0;    // ... and by more than this many ms per step
  int intervals = 3;     // consecutive intervals to flag, and to clear
  // To flag, the consecutive intervals over the margin must also cover this much of the rank's
  // wall time (each interval: its step time x the steps it averages).
  double minSeconds = 2.0;
};

class StragglerDetector {
 public:
  // A rank became a straggler (flagged) or stopped being one, with a line that says so.
  struct Change {
    int rank = -1;
    bool flagged = false;
    QString text;
  };

  explicit StragglerDetector(StragglerOptions options = {}) : options_(options) {}
  const StragglerOptions& options() const { return options_; }

  // One log interval: ranks[r] is rank r's breakdown for it (nullopt: none, which leaves that
  // rank's count as it was). Needs two ranks with a breakdown to compare anything. Returns the
  // flags that went up or down, in rank order.
  std::vector<Change> addInterval(const std::vector<std::optional<wire::StepTimes>>& ranks);

  bool isFlagged(int rank) const;
  std::vector<int> flaggedRanks() const;
  // For a flagged rank, the latest interval in words: "rank 1 is a straggler: compute 27.1 ms vs
  // 6.9 ms median of the others (+293%), mostly data (+20.0 ms)"; empty for others.
  QString explanation(int rank) const;
  qint64 intervals() const { return intervals_; }  // intervals compared so far
  void reset();

 private:
  // A rank's interval in numbers; words only when someone asks (a long run loaded from disk
  // goes through millions of intervals).
  struct Figures {
    double mine = 0;    // its compute, ms per step
    double others = 0;  // the median of the other ranks' compute
    int part = -1;      // StepPart that grew most against the others' median of it (-1: none)
    double partMs = 0;  // by how much
  };
  struct RankState {
    bool flagged = false;
    int over = 0;            // consecutive intervals over the margin
    double overSeconds = 0;  // the rank's wall time in those intervals
    int inLine = 0;          // consecutive intervals within it
    Figures latest;          // of the latest interval (kept up to date for flagged ranks)
  };

  Figures figures(const std::vector<std::optional<wire::StepTimes>>& ranks, int rank, double mine,
                  double others);
  double othersMedian(const std::vector<std::optional<wire::StepTimes>>& ranks, int self, int part);
  static QString describe(int rank, bool flagged, const Figures& f);

  StragglerOptions options_;
  std::vector<RankState> ranks_;
  std::vector<double> scratch_;  // reused for medians
  qint64 intervals_ = 0;
};

}  // namespace ddpdesk

#include "metrics/straggler_detector.h"

#include <algorithm>
#include <cmath>

#include "metrics/step_breakdown.h"

namespace ddpdesk {
namespace {

constexpr int kCompute = -1;  // othersMedian() of compute rather than of one part

double valueOf(const wire::StepTimes& t, int part) {
  return part == kCompute ? computeMs(t) : partMs(t, StepPart(part));
}

// The wall time an interval covers on its rank: the mean step time over the steps it averages (a
// breakdown without a count covers one step).
double intervalSeconds(const wire::StepTimes& t) {
  return t.step * double(std::max(1L, t.steps)) / 1000.0;
}

QString ms(double v) {
  return QString::number(v, 'f', 1) + QStringLiteral(" ms");
}

}  // namespace

double StragglerDetector::othersMedian(const std::vector<std::optional<wire::StepTimes>>& ranks,
                                       int self, int part) {
  scratch_.clear();
  for (int r = 0; r < int(ranks.size()); ++r)
    if (r != self && ranks[r]) scratch_.push_back(valueOf(*ranks[r], part));
  const std::size_t n = scratch_.size();
  const auto mid = scratch_.begin() + n / 2;
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  if (n % 2) return *mid;
  return (*mid + *std::max_element(scratch_.begin(), mid)) / 2;
}

StragglerDetector::Figures StragglerDetector::figures(
    const std::vector<std::optional<wire::StepTimes>>& ranks, int rank, double mine,
    double others) {
  Figures f;
  f.mine = mine;
  f.others = others;
  // The part that grew most against the same part of the others.
  for (StepPart p : kComputeParts) {
    const double d = partMs(*ranks[rank], p) - othersMedian(ranks, rank, int(p));
    if (d > f.partMs) f.partMs = d, f.part = int(p);
  }
  return f;
}

// "rank 1 is a straggler: compute 27.1 ms vs 6.9 ms median of the others (+293%), mostly data
// (+20.0 ms)"; "rank 1 is no longer a straggler: compute 7.0 ms vs 6.9 ms ... (+1%)".
QString StragglerDetector::describe(int rank, bool flagged, const Figures& f) {
  QString s = flagged ? QStringLiteral("rank %1 is a straggler: ").arg(rank)
                      : QStringLiteral("rank %1 is no longer a straggler: ").arg(rank);
  s += QStringLiteral("compute %1 vs %2 median of the others").arg(ms(f.mine), ms(f.others));
  if (f.others > 0)
    s += QStringLiteral(" (%1%2%)")
             .arg(f.mine >= f.others ? QStringLiteral("+") : QString())
             .arg(std::lround((f.mine - f.others) / f.others * 100.0));
  if (f.part >= 0 && f.mine > f.others)
    s += QStringLiteral(", mostly %1 (+%2)").arg(stepPartName(StepPart(f.part)), ms(f.partMs));
  return s;
}

std::vector<StragglerDetector::Change> StragglerDetector::addInterval(
    const std::vector<std::optional<wire::StepTimes>>& ranks) {
  std::vector<Change> changes;
  const int present =
      int(std::count_if(ranks.begin(), ranks.end(), [](const auto& t) { return t.has_value(); }));
  if (present < 2) return changes;  // nobody to compare with
  if (ranks_.size() < ranks.size()) ranks_.resize(ranks.size());
  ++intervals_;
  const int n = std::max(1, options_.intervals);
  for (int r = 0; r < int(ranks.size()); ++r) {
    if (!ranks[r]) continue;
    RankState& st = ranks_[r];
    const double mine = computeMs(*ranks[r]);
    const double others = othersMedian(ranks, r, kCompute);
    const double excess = mine - others;
    const bool over = excess > options_.minMs && excess > options_.margin * others;
    if (over) {
      ++st.over;
      st.overSeconds += intervalSeconds(*ranks[r]);
      st.inLine = 0;
    } else {
      ++st.inLine;
      st.over = 0;
      st.overSeconds = 0;
    }
    const bool flag = !st.flagged && st.over >= n && st.overSeconds >= options_.minSeconds;
    const bool clear = st.flagged && st.inLine >= n;
    // Figures only for the ranks that are (or were just) flagged: the others need no words.
    if (st.flagged || flag) st.latest = figures(ranks, r, mine, others);
    if (flag || clear) {
      st.flagged = flag;
      changes.push_back({r, flag, describe(r, flag, st.latest)});
    }
  }
  return changes;
}

bool StragglerDetector::isFlagged(int rank) const {
  return rank >= 0 && rank < int(ranks_.size()) && ranks_[rank].flagged;
}

std::vector<int> StragglerDetector::flaggedRanks() const {
  std::vector<int> out;
  for (int r = 0; r < int(ranks_.size()); ++r)
    if (ranks_[r].flagged) out.push_back(r);
  return out;
}

QString StragglerDetector::explanation(int rank) const {
  return isFlagged(rank) ? describe(rank, true, ranks_[rank].latest) : QString();
}

void StragglerDetector::reset() {
  ranks_.clear();
  intervals_ = 0;
}

}  // namespace ddpdesk

#include "straggler_detector.h"

#include <algorithm>
#include <cmath>

#include "step_breakdown.h"

namespace ddpdesk {
namespace {

double median(std::vector<double> v) {
  const std::size_t n = v.size();
  std::sort(v.begin(), v.end());
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The median of `value` over every rank with a breakdown except `self`.
template <typename F>
double othersMedian(const std::vector<std::optional<wire::StepTimes>>& ranks, int self, F value) {
  std::vector<double> v;
  for (int r = 0; r < int(ranks.size()); ++r)
    if (r != self && ranks[r]) v.push_back(value(*ranks[r]));
  return median(std::move(v));
}

QString ms(double v) {
  return QString::number(v, 'f', 1) + QStringLiteral(" ms");
}

// "compute 27.1 ms vs 6.9 ms median of the others (+293%), mostly data (+20.0 ms)"
QString comparison(const std::vector<std::optional<wire::StepTimes>>& ranks, int r, double mine,
                   double others) {
  QString s = QStringLiteral("compute %1 vs %2 median of the others").arg(ms(mine), ms(others));
  if (others > 0)
    s += QStringLiteral(" (%1%2%)")
             .arg(mine >= others ? QStringLiteral("+") : QString())
             .arg(std::lround((mine - others) / others * 100.0));
  // The part that grew most against the same part of the others.
  double most = 0;
  StepPart which = StepPart::Data;
  for (StepPart p : kComputeParts) {
    const double d = partMs(*ranks[r], p) -
                     othersMedian(ranks, r, [p](const wire::StepTimes& t) { return partMs(t, p); });
    if (d > most) most = d, which = p;
  }
  if (most > 0 && mine > others)
    s += QStringLiteral(", mostly %1 (+%2)").arg(stepPartName(which), ms(most));
  return s;
}

}  // namespace

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
    const double others = othersMedian(ranks, r, computeMs);
    const double excess = mine - others;
    const bool over = excess > options_.minMs && excess > options_.margin * others;
    if (over) {
      ++st.over;
      st.inLine = 0;
    } else {
      ++st.inLine;
      st.over = 0;
    }
    const QString figures = comparison(ranks, r, mine, others);
    if (!st.flagged && st.over >= n) {
      st.flagged = true;
      st.text = QStringLiteral("rank %1 is a straggler: %2").arg(r).arg(figures);
      changes.push_back({r, true, st.text});
    } else if (st.flagged && st.inLine >= n) {
      st.flagged = false;
      st.text.clear();
      changes.push_back(
          {r, false, QStringLiteral("rank %1 is no longer a straggler: %2").arg(r).arg(figures)});
    } else if (st.flagged) {
      // Still flagged: the explanation follows the latest interval (an interval in line while
      // the flag holds reads "… vs … (+3%)", which is what it is).
      st.text = QStringLiteral("rank %1 is a straggler: %2").arg(r).arg(figures);
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
  return isFlagged(rank) ? ranks_[rank].text : QString();
}

void StragglerDetector::reset() {
  ranks_.clear();
  intervals_ = 0;
}

}  // namespace ddpdesk

#include "metrics/gauge_series.h"

#include <QtNumeric>
#include <algorithm>
#include <cmath>
#include <limits>

namespace ddpdesk {
namespace {}  // namespace

double GaugeSeries::latest() const {
  return value.empty() ? qQNaN() : value.back();
}

double GaugeSeries::max() const {
  double m = qQNaN();
  for (double v : value)
    if (std::isfinite(v) && !(v <= m)) m = v;  // !(v <= NaN) takes the first value
  return m;
}

double GaugeSeries::mean() const {
  double sum = 0;
  std::size_t n = 0;
  for (double v : value)
    if (std::isfinite(v)) {
      sum += v;
      ++n;
    }
  return n ? sum / double(n) : qQNaN();
}

bool GaugeSet::add(const wire::Gauge& g, double samples, quint64 revision) {
  if (g.rank < 0) return false;
  if (int(ranks_.size()) <= g.rank) ranks_.resize(std::size_t(g.rank) + 1);
  Rank& r = ranks_[std::size_t(g.rank)];
  // A handful of names per rank: a linear search beats hashing each message's name.
  GaugeSeries* s = nullptr;
  for (const auto& p : r.series)
    if (p->name == g.name) {
      s = p.get();
      break;
    }
  if (!s) {
    if (r.series.size() >= kMaxNamesPerRank) return false;
    r.series.push_back(std::make_unique<GaugeSeries>());
    s = r.series.back().get();
    s->name = g.name;
    if (std::find(names_.begin(), names_.end(), g.name) == names_.end()) names_.push_back(g.name);
  }
  s->unit = g.unit;
  s->step.push_back(double(g.step));
  s->samples.push_back(samples);
  s->time.push_back(g.time);
  s->value.push_back(g.value);
  s->revision = revision;
  r.revision = revision;
  return true;
}

const GaugeSeries* GaugeSet::find(int rank, std::string_view name) const {
  if (rank < 0 || rank >= int(ranks_.size())) return nullptr;
  for (const auto& p : ranks_[std::size_t(rank)].series)
    if (p->name == name) return p.get();
  return nullptr;
}

double GaugeSet::latest(int rank, std::string_view name) const {
  const GaugeSeries* s = find(rank, name);
  return s ? s->latest() : qQNaN();
}

std::vector<int> GaugeSet::ranksChangedSince(quint64 revision) const {
  std::vector<int> out;
  for (int r = 0; r < int(ranks_.size()); ++r)
    if (ranks_[std::size_t(r)].revision > revision) out.push_back(r);
  return out;
}

void GaugeSet::touchAll(quint64 revision) {
  for (Rank& r : ranks_) {
    if (r.series.empty()) continue;
    r.revision = revision;
    for (auto& s : r.series) s->revision = revision;
  }
}

}  // namespace ddpdesk

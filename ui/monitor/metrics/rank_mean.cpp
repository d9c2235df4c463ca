// RankMean (rank_mean.h): holding the ranks' points until their step is complete.
#include "metrics/rank_mean.h"

#include <map>

namespace ddpdesk {

RankMean::RankMean(int world, double waitS, WaitFor waitFor)
    : wait_s_(waitS), wait_all_(waitFor == WaitFor::Everyone) {
  ranks_.resize(std::size_t(world > 0 ? world : 0), fresh());
}

RankMean::Rank RankMean::fresh() const {
  Rank r;
  r.waited = wait_all_;
  return r;
}

void RankMean::add(wire::Step s, double now, std::vector<wire::Message>& out) {
  if (s.rank < 0) return;
  if (s.rank >= int(ranks_.size())) ranks_.resize(std::size_t(s.rank) + 1, fresh());
  Rank& r = ranks_[std::size_t(s.rank)];
  r.last = s.step;
  if (!r.dropped) r.waited = true;
  if (s.step <= sent_) {
    s.global_loss = s.loss;
    out.push_back(s);
    return;
  }
  auto [it, fresh] = held_.try_emplace(s.step);
  if (fresh) it->second.since = now;
  it->second.points.push_back(s);
  release(out);
  while (held_.size() > kMaxHeldSteps) giveUpOnOldest(out);
}

void RankMean::expect(int rank) {
  if (rank < 0) return;
  if (rank >= int(ranks_.size())) ranks_.resize(std::size_t(rank) + 1, fresh());
  if (!ranks_[std::size_t(rank)].dropped) ranks_[std::size_t(rank)].waited = true;
}

void RankMean::drop(int rank, std::vector<wire::Message>& out) {
  if (rank < 0 || rank >= int(ranks_.size()) || ranks_[std::size_t(rank)].dropped) return;
  ranks_[std::size_t(rank)].dropped = true;
  ranks_[std::size_t(rank)].waited = false;
  release(out);
}

void RankMean::expire(double now, std::vector<wire::Message>& out) {
  while (!held_.empty() && now - held_.begin()->second.since >= wait_s_) giveUpOnOldest(out);
}

void RankMean::giveUpOnOldest(std::vector<wire::Message>& out) {
  const std::int64_t step = held_.begin()->first;
  for (Rank& r : ranks_)
    if (r.waited && (r.last == kNone || r.last < step)) r.waited = false;
  release(out);
}

void RankMean::flush(std::vector<wire::Message>& out) {
  while (!held_.empty()) send(held_.begin()->first, held_.begin()->second, out);
}

void RankMean::reset() {
  for (Rank& r : ranks_) r = fresh();
  held_.clear();
  sent_ = kNone;
}

void RankMean::release(std::vector<wire::Message>& out) {
  while (!held_.empty()) {
    const std::int64_t step = held_.begin()->first;
    for (const Rank& r : ranks_)
      if (r.waited && (r.last == kNone || r.last < step)) return;
    send(step, held_.begin()->second, out);
  }
}

void RankMean::send(std::int64_t step, Held& held, std::vector<wire::Message>& out) {
  // A rank that printed the step twice (a redrawn progress bar) counts with its last loss.
  std::map<int, double> last;
  for (const wire::Step& p : held.points) last[p.rank] = p.loss;
  double sum = 0;
  for (const auto& [rank, loss] : last) sum += loss;
  const double mean = sum / double(last.size());
  for (wire::Step& p : held.points) {
    p.global_loss = mean;
    out.push_back(p);
  }
  sent_ = step;
  held_.erase(step);
}

}  // namespace ddpdesk

// PrintedMean (printed_mean.h): holding printed points until their step is complete.
#include "metrics/printed_mean.h"

#include <map>

namespace ddpdesk {

PrintedMean::PrintedMean(int world, double waitS)
    : wait_s_(waitS), ranks_(std::size_t(world > 0 ? world : 0)) {}

void PrintedMean::add(wire::Step s, double now, std::vector<wire::Message>& out) {
  if (s.rank < 0) return;
  if (s.rank >= int(ranks_.size())) ranks_.resize(std::size_t(s.rank) + 1);
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

void PrintedMean::drop(int rank, std::vector<wire::Message>& out) {
  if (rank < 0 || rank >= int(ranks_.size()) || ranks_[std::size_t(rank)].dropped) return;
  ranks_[std::size_t(rank)].dropped = true;
  ranks_[std::size_t(rank)].waited = false;
  release(out);
}

void PrintedMean::expire(double now, std::vector<wire::Message>& out) {
  while (!held_.empty() && now - held_.begin()->second.since >= wait_s_) giveUpOnOldest(out);
}

void PrintedMean::giveUpOnOldest(std::vector<wire::Message>& out) {
  const std::int64_t step = held_.begin()->first;
  for (Rank& r : ranks_)
    if (r.waited && (r.last == kNone || r.last < step)) r.waited = false;
  release(out);
}

void PrintedMean::flush(std::vector<wire::Message>& out) {
  while (!held_.empty()) send(held_.begin()->first, held_.begin()->second, out);
}

void PrintedMean::reset() {
  for (Rank& r : ranks_) r = Rank();
  held_.clear();
  sent_ = kNone;
}

void PrintedMean::release(std::vector<wire::Message>& out) {
  while (!held_.empty()) {
    const std::int64_t step = held_.begin()->first;
    for (const Rank& r : ranks_)
      if (r.waited && (r.last == kNone || r.last < step)) return;
    send(step, held_.begin()->second, out);
  }
}

void PrintedMean::send(std::int64_t step, Held& held, std::vector<wire::Message>& out) {
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

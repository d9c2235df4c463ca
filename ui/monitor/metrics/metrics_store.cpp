// MetricsStore (metrics_store.h): ingesting messages into the series and reading them back;
// loading a metrics.jsonl file is metrics_store_file.cpp's.
#include "metrics/metrics_store.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ddpdesk {
namespace {

// A rank number far beyond any real run is a corrupt line, not a reason to allocate gigabytes.
constexpr int kMaxRanks = 4096;

const StepSeries kNoSeries;
const BreakdownSeries kNoBreakdown;
const RankInfo kNoInfo;

}  // namespace

MetricsStore::MetricsStore(QObject* parent) : QObject(parent) {
  // Coalescing: the first change arms the timer, later ones ride along until it fires.
  timer_.setSingleShot(true);
  timer_.setInterval(50);
  connect(&timer_, &QTimer::timeout, this, &MetricsStore::flush);
}

void MetricsStore::ingest(const wire::Message& message) {
  if (loading_) {  // goes on top of the file being loaded
    loading_->pending.push_back(message);
    return;
  }
  ++revision_;
  d_.apply(message, revision_);
  watchLoss(message);
  touch();
}

void MetricsStore::ingest(const std::vector<wire::Message>& messages) {
  if (messages.empty()) return;
  if (loading_) {
    loading_->pending.insert(loading_->pending.end(), messages.begin(), messages.end());
    return;
  }
  ++revision_;
  for (const auto& m : messages) {
    d_.apply(m, revision_);
    watchLoss(m);
  }
  touch();
}

void MetricsStore::watchLoss(const wire::Message& m) {
  const auto* s = std::get_if<wire::Step>(&m);
  if (!s || std::isfinite(s->loss) || s->rank < 0 || s->rank >= kMaxRanks) return;
  const auto rank = std::size_t(s->rank);
  if (rank >= nonFiniteSeen_.size()) nonFiniteSeen_.resize(rank + 1, false);
  if (nonFiniteSeen_[rank]) return;
  nonFiniteSeen_[rank] = true;
  Q_EMIT nonFiniteLoss(s->rank, s->step);
}

void MetricsStore::touch() {
  dirty_ = true;
  if (!timer_.isActive()) timer_.start();
}

void MetricsStore::flush() {
  timer_.stop();
  if (!dirty_) return;
  dirty_ = false;
  Q_EMIT updated(revision_);
}

void MetricsStore::clear() {
  timer_.stop();
  dirty_ = false;
  loading_.reset();            // a load still running is dropped when it ends
  const int world = d_.world;  // the expected world outlives the data
  d_ = Data();
  d_.world = world;
  nonFiniteSeen_.clear();
  ++revision_;  // readers comparing revisions see a change
  Q_EMIT reset();
}

void MetricsStore::setWorld(int world) {
  d_.setWorld(world);
}

void MetricsStore::Data::setWorld(int w) {
  world = std::min(std::max(w, 0), kMaxRanks);
  if (int(ranks.size()) < world) {
    ranks.resize(world);
    breakdowns.resize(world);
    infos.resize(world);
    sessions.resize(world);
  }
}

StepSeries& MetricsStore::Data::series(int rank) {
  if (int(ranks.size()) <= rank) {
    ranks.resize(rank + 1);
    breakdowns.resize(rank + 1);
    infos.resize(rank + 1);
    sessions.resize(rank + 1);
  }
  return ranks[rank];
}

RankInfo& MetricsStore::Data::info(int rank, quint64 revision) {
  series(rank);
  RankInfo& i = infos[rank];
  i.seen = true;
  i.revision = revision;
  return i;
}

void MetricsStore::Data::apply(const wire::Message& msg, quint64 revision) {
  const int rank = wire::rank_of(msg);
  if (rank < 0 || rank >= kMaxRanks) return;
  ++messages;
  if (const auto* s = std::get_if<wire::Step>(&msg)) {
    StepSeries& r = series(rank);
    r.step.push_back(double(s->step));
    r.loss.push_back(s->loss);
    r.samples.push_back(double(s->samples));
    r.time.push_back(s->time);
    r.samplesPerSec.push_back(s->samples_per_s);
    r.epoch.push_back(s->epoch);
    r.revision = revision;
    breakdowns[rank].append(*s);  // only when the message carries time_ms
    RankInfo& i = info(rank, revision);
    i.epoch = s->epoch;
    i.step = s->step;
    i.loss = s->loss;
    i.samplesPerSec = s->samples_per_s;
    i.time = s->time;
    i.training.add(*s, sessions[rank]);
    // Every rank reports the same global numbers; the first report of a step makes the point.
    // A new session (a rank said hello again: a resume) may restart from an earlier step.
    const double last = global.step.empty() ? -1.0 : global.step.back();
    const int session = sessions[rank];
    if (double(s->step) > last || (session > globalSession && double(s->step) < last)) {
      global.step.push_back(double(s->step));
      global.loss.push_back(s->global_loss);
      global.samples.push_back(double(s->samples));
      global.time.push_back(s->time);
      global.samplesPerSec.push_back(s->samples_per_s);
      global.epoch.push_back(s->epoch);
      global.revision = revision;
      globalSession = std::max(globalSession, session);
    }
  } else if (const auto* e = std::get_if<wire::Eval>(&msg)) {
    // Evaluation results are global (allreduced); several ranks may send the same one, and
    // their connections are read in any order.
    if (evalKeys.insert({e->epoch, e->step}).second) {
      // The epoch's last step message goes out right before its evaluation starts.
      const RankInfo& before = info(rank, revision);
      if (!series(rank).step.empty() && e->time > before.time) evalSeconds += e->time - before.time;
      evals.step.push_back(double(e->step));
      evals.epoch.push_back(e->epoch);
      evals.loss.push_back(e->loss);
      evals.accuracy.push_back(e->accuracy ? *e->accuracy
                                           : std::numeric_limits<double>::quiet_NaN());
      evals.revision = revision;
    }
    info(rank, revision);
  } else if (const auto* ev = std::get_if<wire::Event>(&msg)) {
    events.push_back(*ev);
    RankInfo& i = info(rank, revision);
    i.lastEvent = QString::fromStdString(ev->event);
    // The run's length is the latest session's: a resume may end sooner than the session before
    // it planned (fewer epochs). The latest is the one that started furthest on, whatever order
    // the sessions' lines arrive in (the history is read while the new session streams).
    if (ev->event == "started" && ev->step >= totalFrom) {
      totalSteps = ev->total_steps;
      totalFrom = ev->step;
    }
    if (ev->event == "checkpoint" && !ev->path.empty())
      lastCheckpoint = QString::fromStdString(ev->path);
    if (ev->event == "epoch") i.epoch = ev->epoch;
  } else if (const auto* g = std::get_if<wire::Gauge>(&msg)) {
    // x on the samples axis: what the rank had trained when the value came in.
    const Column& samples = series(rank).samples;
    if (gauges.add(*g, samples.empty() ? 0.0 : samples.back(), revision)) info(rank, revision);
  } else if (const auto* er = std::get_if<wire::Error>(&msg)) {
    errors.push_back(*er);
    info(rank, revision).error = QString::fromStdString(er->message);
  } else if (const auto* h = std::get_if<wire::Hello>(&msg)) {
    RankInfo& i = info(rank, revision);
    i.pid = h->pid;
    i.host = QString::fromStdString(h->host);
    i.device = QString::fromStdString(h->device);
    // A new life of the rank (a resume, a restart): its last words were the previous one's.
    i.error.clear();
    i.lastEvent.clear();
    ++sessions[rank];
    if (h->world > world) setWorld(h->world);
  }
}

const StepSeries& MetricsStore::rankSeries(int rank) const {
  return rank >= 0 && rank < int(d_.ranks.size()) ? d_.ranks[rank] : kNoSeries;
}

const BreakdownSeries& MetricsStore::breakdown(int rank) const {
  return rank >= 0 && rank < int(d_.breakdowns.size()) ? d_.breakdowns[rank] : kNoBreakdown;
}

const RankInfo& MetricsStore::rankInfo(int rank) const {
  return rank >= 0 && rank < int(d_.infos.size()) ? d_.infos[rank] : kNoInfo;
}

std::vector<int> MetricsStore::ranksChangedSince(quint64 revision) const {
  std::vector<int> out;
  for (int r = 0; r < int(d_.ranks.size()); ++r)
    if (d_.ranks[r].revision > revision) out.push_back(r);
  return out;
}

RunProgress MetricsStore::progress() const {
  RunProgress p;
  p.world = std::max(d_.world, int(d_.ranks.size()));
  p.totalSteps = d_.totalSteps;
  p.lastCheckpoint = d_.lastCheckpoint;
  p.evalSeconds = d_.evalSeconds;
  if (!d_.evals.step.empty()) {
    p.evalLoss = d_.evals.loss.back();
    p.evalAccuracy = d_.evals.accuracy.back();
  }
  const std::size_t n = d_.global.size();
  if (n == 0) return p;
  p.step = qint64(d_.global.step[n - 1]);
  p.epoch = int(d_.global.epoch[n - 1]);
  p.samples = qint64(d_.global.samples[n - 1]);
  p.globalLoss = d_.global.loss[n - 1];
  p.samplesPerSec = d_.global.samplesPerSec[n - 1];
  p.elapsed = d_.global.time[n - 1];
  // Step rate over the recent tail of the current session (time restarts on resume).
  std::size_t i0 = n - 1;
  while (i0 > 0 && n - i0 < 200 && d_.global.time[i0 - 1] <= d_.global.time[i0] &&
         d_.global.step[i0 - 1] <= d_.global.step[i0])
    --i0;
  const double dt = d_.global.time[n - 1] - d_.global.time[i0];
  const double ds = d_.global.step[n - 1] - d_.global.step[i0];
  if (p.totalSteps > 0 && dt > 0 && ds > 0)
    p.etaSeconds = std::max(0.0, double(p.totalSteps - p.step) * dt / ds);
  if (p.samplesPerSec <= 0 && dt > 0) {
    const double dsamples = d_.global.samples[n - 1] - d_.global.samples[i0];
    p.samplesPerSec = dsamples / dt;
  }
  return p;
}

}  // namespace ddpdesk

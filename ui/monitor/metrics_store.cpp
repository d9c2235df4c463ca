#include "metrics_store.h"

#include <QFile>
#include <algorithm>
#include <cmath>
#include <cstring>

namespace ddpdesk {
namespace {

// A rank number far beyond any real run is a corrupt line, not a reason to allocate gigabytes.
constexpr int kMaxRanks = 4096;

const StepSeries kNoSeries;
const RankInfo kNoInfo;

}  // namespace

MetricsStore::MetricsStore(QObject* parent) : QObject(parent) {
  // Coalescing: the first change arms the timer, later ones ride along until it fires.
  timer_.setSingleShot(true);
  timer_.setInterval(50);
  connect(&timer_, &QTimer::timeout, this, &MetricsStore::flush);
}

void MetricsStore::ingest(const wire::Message& message) {
  ++revision_;
  apply(message);
  touch();
}

void MetricsStore::ingest(const std::vector<wire::Message>& messages) {
  if (messages.empty()) return;
  ++revision_;
  for (const auto& m : messages) apply(m);
  touch();
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
  ranks_.clear();
  infos_.clear();
  sessions_.clear();
  global_ = GlobalSeries();
  evals_ = EvalSeries();
  events_.clear();
  errors_.clear();
  evalKeys_.clear();
  messages_ = 0;
  totalSteps_ = 0;
  globalSession_ = 0;
  lastCheckpoint_.clear();
  ++revision_;  // readers comparing revisions see a change
  Q_EMIT reset();
}

void MetricsStore::setWorld(int world) {
  world_ = std::min(std::max(world, 0), kMaxRanks);
  if (int(ranks_.size()) < world_) {
    ranks_.resize(world_);
    infos_.resize(world_);
    sessions_.resize(world_);
  }
}

StepSeries& MetricsStore::series(int rank) {
  if (int(ranks_.size()) <= rank) {
    ranks_.resize(rank + 1);
    infos_.resize(rank + 1);
    sessions_.resize(rank + 1);
  }
  return ranks_[rank];
}

RankInfo& MetricsStore::info(int rank) {
  series(rank);
  RankInfo& i = infos_[rank];
  i.seen = true;
  i.revision = revision_;
  return i;
}

void MetricsStore::apply(const wire::Message& msg) {
  const int rank = wire::rank_of(msg);
  if (rank < 0 || rank >= kMaxRanks) return;
  ++messages_;
  if (const auto* s = std::get_if<wire::Step>(&msg)) {
    StepSeries& r = series(rank);
    r.step.push_back(double(s->step));
    r.loss.push_back(s->loss);
    r.samples.push_back(double(s->samples));
    r.time.push_back(s->time);
    r.samplesPerSec.push_back(s->samples_per_s);
    r.epoch.push_back(s->epoch);
    r.revision = revision_;
    RankInfo& i = info(rank);
    i.epoch = s->epoch;
    i.step = s->step;
    i.loss = s->loss;
    i.samplesPerSec = s->samples_per_s;
    i.time = s->time;
    // Every rank reports the same global numbers; the first report of a step makes the point.
    // A new session (a rank said hello again: a resume) may restart from an earlier step.
    const double last = global_.step.empty() ? -1.0 : global_.step.back();
    const int session = sessions_[rank];
    if (double(s->step) > last || (session > globalSession_ && double(s->step) < last)) {
      global_.step.push_back(double(s->step));
      global_.loss.push_back(s->global_loss);
      global_.samples.push_back(double(s->samples));
      global_.time.push_back(s->time);
      global_.samplesPerSec.push_back(s->samples_per_s);
      global_.epoch.push_back(s->epoch);
      global_.revision = revision_;
      globalSession_ = std::max(globalSession_, session);
    }
  } else if (const auto* e = std::get_if<wire::Eval>(&msg)) {
    // Evaluation results are global (allreduced); several ranks may send the same one, and
    // their connections are read in any order.
    if (evalKeys_.insert({e->epoch, e->step}).second) {
      evals_.step.push_back(double(e->step));
      evals_.epoch.push_back(e->epoch);
      evals_.loss.push_back(e->loss);
      evals_.accuracy.push_back(e->accuracy ? *e->accuracy
                                            : std::numeric_limits<double>::quiet_NaN());
      evals_.revision = revision_;
    }
    info(rank);
  } else if (const auto* ev = std::get_if<wire::Event>(&msg)) {
    events_.push_back(*ev);
    RankInfo& i = info(rank);
    i.lastEvent = QString::fromStdString(ev->event);
    if (ev->event == "started") totalSteps_ = std::max<qint64>(totalSteps_, ev->total_steps);
    if (ev->event == "checkpoint" && !ev->path.empty())
      lastCheckpoint_ = QString::fromStdString(ev->path);
    if (ev->event == "epoch") i.epoch = ev->epoch;
  } else if (const auto* er = std::get_if<wire::Error>(&msg)) {
    errors_.push_back(*er);
    info(rank).error = QString::fromStdString(er->message);
  } else if (const auto* h = std::get_if<wire::Hello>(&msg)) {
    RankInfo& i = info(rank);
    i.pid = h->pid;
    i.host = QString::fromStdString(h->host);
    i.device = QString::fromStdString(h->device);
    ++sessions_[rank];
    if (h->world > world_) setWorld(h->world);
  }
}

const StepSeries& MetricsStore::rankSeries(int rank) const {
  return rank >= 0 && rank < int(ranks_.size()) ? ranks_[rank] : kNoSeries;
}

const RankInfo& MetricsStore::rankInfo(int rank) const {
  return rank >= 0 && rank < int(infos_.size()) ? infos_[rank] : kNoInfo;
}

std::vector<int> MetricsStore::ranksChangedSince(quint64 revision) const {
  std::vector<int> out;
  for (int r = 0; r < int(ranks_.size()); ++r)
    if (ranks_[r].revision > revision) out.push_back(r);
  return out;
}

RunProgress MetricsStore::progress() const {
  RunProgress p;
  p.world = std::max(world_, int(ranks_.size()));
  p.totalSteps = totalSteps_;
  p.lastCheckpoint = lastCheckpoint_;
  if (!evals_.step.empty()) {
    p.evalLoss = evals_.loss.back();
    p.evalAccuracy = evals_.accuracy.back();
  }
  const std::size_t n = global_.size();
  if (n == 0) return p;
  p.step = qint64(global_.step[n - 1]);
  p.epoch = int(global_.epoch[n - 1]);
  p.samples = qint64(global_.samples[n - 1]);
  p.globalLoss = global_.loss[n - 1];
  p.samplesPerSec = global_.samplesPerSec[n - 1];
  p.elapsed = global_.time[n - 1];
  // Step rate over the recent tail of the current session (time restarts on resume).
  std::size_t i0 = n - 1;
  while (i0 > 0 && n - i0 < 200 && global_.time[i0 - 1] <= global_.time[i0] &&
         global_.step[i0 - 1] <= global_.step[i0])
    --i0;
  const double dt = global_.time[n - 1] - global_.time[i0];
  const double ds = global_.step[n - 1] - global_.step[i0];
  if (p.totalSteps > 0 && dt > 0 && ds > 0)
    p.etaSeconds = std::max(0.0, double(p.totalSteps - p.step) * dt / ds);
  if (p.samplesPerSec <= 0 && dt > 0) {
    const double dsamples = global_.samples[n - 1] - global_.samples[i0];
    p.samplesPerSec = dsamples / dt;
  }
  return p;
}

MetricsStore::LoadResult MetricsStore::loadJsonl(const QString& path) {
  clear();
  LoadResult r;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    r.error = QStringLiteral("cannot read %1: %2").arg(path, f.errorString());
    return r;
  }
  const QByteArray all = f.readAll();
  const char* p = all.constData();
  const char* end = p + all.size();
  ++revision_;
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    std::string_view line(p, (nl ? nl : end) - p);
    p = nl ? nl + 1 : end;
    if (line.empty() || line == "\r") continue;
    wire::Decoded d = wire::decode(line);
    if (!d.message) {
      ++r.malformed;
      continue;
    }
    apply(*d.message);
    ++r.messages;
  }
  r.ok = true;
  touch();
  flush();
  return r;
}

}  // namespace ddpdesk

#include "metrics/metrics_store.h"

#include <QFile>
#include <QFutureWatcher>
#include <QtConcurrent>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

namespace ddpdesk {
namespace {

// A rank number far beyond any real run is a corrupt line, not a reason to allocate gigabytes.
constexpr int kMaxRanks = 4096;

const StepSeries kNoSeries;
const BreakdownSeries kNoBreakdown;
const RankInfo kNoInfo;

}  // namespace

// A load in progress: the messages ingested while it runs, applied after the file's.
struct MetricsStore::Load {
  std::vector<wire::Message> pending;
};

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
  touch();
}

void MetricsStore::ingest(const std::vector<wire::Message>& messages) {
  if (messages.empty()) return;
  if (loading_) {
    loading_->pending.insert(loading_->pending.end(), messages.begin(), messages.end());
    return;
  }
  ++revision_;
  for (const auto& m : messages) d_.apply(m, revision_);
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
  loading_.reset();            // a load still running is dropped when it ends
  const int world = d_.world;  // the expected world outlives the data
  d_ = Data();
  d_.world = world;
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

namespace {

// One line's outcome, as a file load counts it.
struct FileLine {
  using Kind = wire::Decoded::Kind;
  Kind kind = Kind::Blank;
  int unknownFields = 0;
  std::optional<wire::Message> message;
};

// Decodes the complete lines of [p, end) into `out`, in order.
void decodeLines(const char* p, const char* end, std::vector<FileLine>& out) {
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', std::size_t(end - p)));
    if (!nl) nl = end;
    const std::string_view line(p, std::size_t(nl - p));
    p = nl + 1;
    FileLine& f = out.emplace_back();
    wire::Decoded d = wire::decode(line);
    f.kind = d.kind;
    if (d.kind == wire::Decoded::Kind::Message) {
      f.unknownFields = d.unknown_fields;
      f.message = std::move(d.message);
    }
  }
}

}  // namespace

MetricsStore::LoadResult MetricsStore::readJsonl(const QString& path, Data& into) {
  LoadResult r;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    r.error = QStringLiteral("cannot read %1: %2").arg(path, f.errorString());
    return r;
  }
  // In blocks, not readAll(): a run of millions of steps is a file of gigabytes. Each block's
  // lines are decoded on every core at once (decoding is most of a load's work), each thread a
  // slice of whole lines, while this thread applies the block before, in file order, as ingest()
  // would: the two overlap, so applying costs no time of its own while there is a core for it.
  const int threads = std::clamp(int(std::thread::hardware_concurrency()), 1, 8);
  // More slices than threads, taken in turn: a thread that shares its core with the applying
  // one finishes fewer of them, instead of the others waiting for it at the end of each block.
  const int sliceCount = threads * 4;
  using Slices = std::vector<std::vector<FileLine>>;
  Slices decoding{std::size_t(sliceCount)}, applying{std::size_t(sliceCount)};
  auto apply = [&](Slices& slices) {
    for (std::vector<FileLine>& lines : slices) {
      for (FileLine& l : lines) {
        switch (l.kind) {
          case FileLine::Kind::Blank:
            break;
          case FileLine::Kind::Ignored:
            ++r.ignored;
            break;
          case FileLine::Kind::Malformed:
            ++r.malformed;
            break;
          case FileLine::Kind::Message:
            r.unknownFields += l.unknownFields;
            into.apply(*l.message, 0);
            ++r.messages;
            break;
        }
      }
      lines.clear();  // keeps its capacity for a later block
    }
  };
  // Decodes [p, end) into `decoding` on the worker threads while this one applies `applying`;
  // then the two swap.
  auto decodeBlock = [&](const char* p, const char* end) {
    std::vector<const char*> cuts{p};
    for (int t = 1; t < sliceCount; ++t) {
      const char* at = p + (end - p) * t / sliceCount;
      at = std::max(at, cuts.back());
      const void* nl = std::memchr(at, '\n', std::size_t(end - at));
      cuts.push_back(nl ? static_cast<const char*>(nl) + 1 : end);
    }
    cuts.push_back(end);
    std::atomic<int> nextSlice{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&] {
        for (int i; (i = nextSlice.fetch_add(1, std::memory_order_relaxed)) < sliceCount;)
          decodeLines(cuts[std::size_t(i)], cuts[std::size_t(i) + 1], decoding[std::size_t(i)]);
      });
    apply(applying);
    for (std::thread& w : workers) w.join();
    std::swap(decoding, applying);
  };
  // Two blocks' decoded lines are held at once (one decoding, one applying), each ~1.3x the
  // block's size: 16 MB blocks hold what one 32 MB block did before the two overlapped.
  constexpr std::size_t kBlock = 16 << 20;
  // One buffer for the whole file: the unfinished last line moves to its front and the next
  // block is read after it. A fresh block per read (as QByteArray's resize after removing from
  // the front gave) costs a page fault per 4 KiB each time, a quarter of a load's CPU time.
  // It grows only while a line is longer than a block.
  std::vector<char> buf;
  std::size_t kept = 0;
  for (;;) {
    if (buf.size() < kept + kBlock) buf.resize(kept + kBlock);
    const qint64 got = f.read(buf.data() + kept, qint64(kBlock));
    if (got <= 0) break;
    const std::size_t have = kept + std::size_t(got);
    const void* last = memrchr(buf.data(), '\n', have);
    if (!last) {  // no complete line yet
      kept = have;
      continue;
    }
    const char* end = static_cast<const char*>(last) + 1;
    decodeBlock(buf.data(), end);
    kept = std::size_t(buf.data() + have - end);
    std::memmove(buf.data(), end, kept);  // the unfinished last line waits for the next block
  }
  decodeBlock(buf.data(), buf.data() + kept);  // a last line without newline
  apply(applying);
  r.ok = true;
  return r;
}

void MetricsStore::adopt(Data&& data) {
  clear();
  data.world = std::max(data.world, d_.world);  // as if ingested after clear()
  d_ = std::move(data);
  // Everything is new as of this revision (the reader thread had none to give).
  ++revision_;
  for (StepSeries& s : d_.ranks) s.revision = revision_;
  for (RankInfo& i : d_.infos)
    if (i.seen) i.revision = revision_;
  d_.global.revision = revision_;
  d_.evals.revision = revision_;
  d_.gauges.touchAll(revision_);
  touch();
}

MetricsStore::LoadResult MetricsStore::loadJsonl(const QString& path) {
  Data data;
  const LoadResult r = readJsonl(path, data);
  adopt(std::move(data));
  flush();
  return r;
}

void MetricsStore::loadJsonlAsync(const QString& path) {
  auto load = std::make_shared<Load>();
  loading_ = load;
  struct Read {
    Data data;
    LoadResult result;
  };
  auto* watcher = new QFutureWatcher<std::shared_ptr<Read>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, load] {
    watcher->deleteLater();
    if (loading_ != load) return;  // superseded by clear() or another load
    loading_.reset();
    const std::shared_ptr<Read> read = watcher->result();
    adopt(std::move(read->data));
    if (!load->pending.empty()) {
      ++revision_;
      for (const auto& m : load->pending) d_.apply(m, revision_);
    }
    flush();
    Q_EMIT loaded(read->result);
  });
  watcher->setFuture(QtConcurrent::run([path] {
    auto read = std::make_shared<Read>();
    read->result = readJsonl(path, read->data);
    return read;
  }));
}

}  // namespace ddpdesk

// MetricsStore's file loader (metrics_store.h): a run's metrics.jsonl read in blocks, decoded on
// every core while the block before is applied in file order, at once or on a worker thread.
#include <QFile>
#include <QFutureWatcher>
#include <QtConcurrent>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "metrics/metrics_store.h"

namespace ddpdesk {

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

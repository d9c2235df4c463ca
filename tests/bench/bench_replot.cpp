// bench_replot: how the GUI's charts hold up with big and fast runs.
//  1. Replot time of the loss chart with 8 ranks x 1,000,000 points each (plus the global curve),
//     every point kept, QCustomPlot's adaptive sampling on. Target: < 30 ms per redraw.
//  2. Event-loop latency while 8 ranks stream 10,000 step messages/s in total through real
//     Unix-domain sockets into a MetricsServer -> MetricsStore -> charts panel, with a rank table
//     refreshed at 4 Hz and a log view. Measured as the lateness of a 5 ms timer. Target: < 50 ms.
//     Three runs: from an empty chart; on top of the 8 x 1,000,000 points; and from an empty
//     chart with a line of rank output per message (the fake worker's chattiness; the real
//     worker writes a line per epoch).
//  3. GUI-thread stalls (the same timer's lateness) while the charts panel loads 8 x 1,000,000
//     points at once: switching the x axis to samples and to wall time (curves rebuilt on a
//     worker thread; and, as the peer, on the GUI thread), and opening such a run from the history
//     (its metrics.jsonl decoded on worker threads, then the curves built). Target: < 50 ms, like
//     streaming; the whole opening, fully charted, in <= 3 s at 8 x 1M. Side by side: the file's
//     lines decoded by the product's decoder and by its peer (the nlohmann-json decoder it
//     replaced), and the memory each stored point takes.
// Runs on any Qt platform; `QT_QPA_PLATFORM=offscreen bench_replot` on a machine without display.
// Usage: bench_replot [points_per_rank=250000] [stream_seconds=10] [messages_per_s=10000]
//        bench_replot --full    (8 x 1,000,000 points, the size the targets are set for)
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QSplitter>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <qcustomplot.h>

#include "bench_live_panel.h"
#include "bench_socket.h"
#include "charts/charts_panel.h"
#include "charts/loss_chart.h"
#include "charts/throughput_chart.h"
#include "history/past_run_loader.h"
#include "live/log_view.h"
#include "live/rank_table.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "run/run_directory.h"
#include "wire.h"
#include "wire_decode_nlohmann.h"

using namespace ddpdesk;
using namespace ddpdesk::bench;

namespace {

constexpr int kRanks = 8;

wire::Step makeStep(int rank, long i) {
  wire::Step s;
  s.rank = rank;
  s.epoch = int(i / 10000);
  s.step = i;
  // Noisy and decreasing, like a loss: adaptive sampling has real work to do.
  const double noise = double((i * 2654435761u + rank * 97u) % 1000) / 1000.0 - 0.5;
  s.loss = 2.0 / (1.0 + 1e-4 * double(i)) + 0.2 * noise + 0.01 * rank;
  s.global_loss = 2.0 / (1.0 + 1e-4 * double(i)) + 0.05 * noise;
  s.samples = i * 64 * kRanks;
  s.time = double(i) * 0.004;
  s.samples_per_s = 120000 + 5000 * noise;
  return s;
}

void fill(MetricsStore& store, long perRank) {
  std::vector<wire::Message> batch;
  batch.reserve(8192);
  for (int r = 0; r < kRanks; ++r)
    store.ingest(wire::Hello{wire::kVersion, "", r, kRanks, 1000 + r, "bench", "cpu"});
  for (long i = 1; i <= perRank; ++i) {
    for (int r = 0; r < kRanks; ++r) batch.push_back(makeStep(r, i));
    if (batch.size() >= 8000) {
      store.ingest(batch);
      batch.clear();
    }
  }
  store.ingest(batch);
}

// This process's resident memory, from /proc/self/statm.
long residentBytes() {
  QFile statm(QStringLiteral("/proc/self/statm"));
  if (!statm.open(QIODevice::ReadOnly)) return 0;
  const QList<QByteArray> fields = statm.readAll().split(' ');
  return fields.size() > 1 ? fields[1].toLong() * long(sysconf(_SC_PAGESIZE)) : 0;
}

// Times `n` full replots (render into the plot's buffer and paint the widget).
Stats timeReplots(QCustomPlot* plot, int n) {
  std::vector<double> ms;
  plot->replot(QCustomPlot::rpImmediateRefresh);  // warm-up: label cache, buffers
  for (int i = 0; i < n; ++i) {
    QElapsedTimer t;
    t.start();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    ms.push_back(double(t.nsecsElapsed()) * 1e-6);
  }
  return stats(ms);
}

void printReplot(const char* what, const Stats& s) {
  std::printf("  %-44s median %6.1f ms  max %6.1f ms  %s\n", what, s.median, s.max,
              s.median < 30 ? "(< 30 ms: met)" : "(>= 30 ms: NOT met)");
}

// Runs the event loop until `done()` holds or `timeoutS` passed, and waits for the redraws after.
void waitUntil(const std::function<bool()>& done, double timeoutS = 600) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < timeoutS * 1000)
    QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
}

// The lateness of a 5 ms timer on the GUI thread from calling `start()` (inside the event loop)
// until `done()` holds; `seconds` gets how long that took.
Stats measureStall(const std::function<void()>& start, const std::function<bool()>& done,
                   double* seconds) {
  std::vector<double> late;
  QEventLoop loop;
  QElapsedTimer clock;
  qint64 last = 0;
  QTimer tick;
  tick.setTimerType(Qt::PreciseTimer);
  tick.setInterval(5);
  QObject::connect(&tick, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    late.push_back(std::max(0.0, double(now - last) * 1e-6 - 5.0));
    last = now;
    if (done()) loop.quit();
  });
  QTimer::singleShot(0, [&] {
    clock.start();
    tick.start();
    start();
  });
  loop.exec();
  *seconds = double(clock.nsecsElapsed()) * 1e-9;
  return stats(late);
}

void printStall(const char* what, const Stats& s, double seconds) {
  std::printf("  %-44s %5.2f s; timer lateness max %7.1f ms, p99 %5.1f ms %s\n", what, seconds,
              s.max, s.p99, s.max < 50 ? "(< 50 ms: met)" : "(>= 50 ms: NOT met)");
}

// Streams `rate` messages/s in total from 8 writer threads for `seconds`; returns the lateness
// of a 5 ms timer on the GUI thread meanwhile.
Stats streamAndMeasure(MetricsStore& store, LivePanel& panel, long startStep, double seconds,
                       double rate, bool logLines, long* received) {
  MetricsServer server;
  const std::string token = "bench-token";
  QString error;
  if (!server.listen(QString::fromStdString(token), kRanks, &error)) {
    std::fprintf(stderr, "bench_replot: %s\n", qPrintable(error));
    return {};
  }
  long got = 0;
  QObject::connect(&server, &MetricsServer::messagesReceived,
                   [&](const std::vector<wire::Message>& batch, const QByteArray&) {
                     store.ingest(batch);
                     got += long(batch.size());
                     // A worker as chatty as the fake one: a line of output per step.
                     if (logLines)
                       for (const auto& m : batch)
                         if (const auto* s = std::get_if<wire::Step>(&m))
                           panel.log->appendLine(
                               s->rank, true,
                               QStringLiteral("step %1 loss %2").arg(s->step).arg(s->loss));
                   });

  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  const double perRankRate = rate / kRanks;
  for (int r = 0; r < kRanks; ++r) {
    writers.emplace_back([&, r] {
      const int fd = connectTo(server.socketPath());
      if (fd < 0) return;
      writeAll(fd, wire::encode(
                       wire::Hello{wire::kVersion, token, r, kRanks, 2000 + r, "bench", "cpu"}) +
                       "\n");
      // Paced in 1 ms slices, as ranks with a ~1 ms step would send.
      const auto t0 = std::chrono::steady_clock::now();
      long sent = 0, i = startStep;
      while (!stop.load()) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (elapsed >= seconds) break;
        std::string out;
        for (; double(sent) < elapsed * perRankRate; ++sent)
          out += wire::encode(makeStep(r, ++i)) + "\n";
        if (!out.empty()) writeAll(fd, out);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ::close(fd);
    });
  }

  TimerLateness lateness;
  lateness.start();
  QTimer end;
  end.setSingleShot(true);
  QObject::connect(&end, &QTimer::timeout, [] { QCoreApplication::quit(); });
  end.start(int(seconds * 1000) + 500);
  QApplication::exec();
  stop = true;
  for (auto& w : writers) w.join();
  *received = got;
  return lateness.result();
}

// Opens a run of 8 x `perRank` points from the history into a charts panel, as the window does:
// how long until it is fully charted, the GUI thread's stalls meanwhile, the CPU time and the
// memory it takes; then the file's lines decoded on one core by the decoder and by its peer.
bool openFromHistory(long perRank) {
  bool ok = true;
  QElapsedTimer t;

  QTemporaryDir dir;
  const QString runDir = dir.filePath(QStringLiteral("bench-run"));
  QDir().mkpath(runDir);
  t.restart();
  {
    QFile f(RunDirectory::metricsPath(runDir));
    if (!f.open(QIODevice::WriteOnly)) return false;
    std::string out;
    for (int r = 0; r < kRanks; ++r)
      out +=
          wire::encode(wire::Hello{wire::kVersion, "", r, kRanks, 1000 + r, "bench", "cpu"}) + "\n";
    for (long i = 1; i <= perRank; ++i) {
      for (int r = 0; r < kRanks; ++r) out += wire::encode(makeStep(r, i)) + "\n";
      if (out.size() > (8u << 20)) {
        f.write(out.data(), qint64(out.size()));
        out.clear();
      }
    }
    f.write(out.data(), qint64(out.size()));
  }
  std::printf("  wrote a %d x %ld metrics.jsonl (%.0f MB) in %.1f s\n", kRanks, perRank,
              double(QFileInfo(RunDirectory::metricsPath(runDir)).size()) / 1e6,
              double(t.nsecsElapsed()) * 1e-9);
  ChartsPanel panel;
  panel.resize(1400, 1000);
  panel.show();
  QApplication::processEvents();
  PastRunLoader opener;
  bool opened = false;
  QElapsedTimer sinceOpen;
  double storedSecs = 0;  // the file read and stored; the curves are built after that
  QObject::connect(&opener, &PastRunLoader::opened, [&](const ChartSources& sources) {
    storedSecs = double(sinceOpen.nsecsElapsed()) * 1e-9;
    panel.setSources(sources, false);
    opened = true;
  });
  double secs = 0;
  const long rss0 = residentBytes();
  const std::clock_t cpu0 = std::clock();  // every thread of this process
  const Stats s = measureStall(
      [&] {
        sinceOpen.start();
        opener.open({runDir}, QString(), nullptr);
      },
      [&] { return opened && !panelLoading(panel); }, &secs);
  const double cpuSecs = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  printStall("opening the run from the history:", s, secs);
  std::printf("  of which reading and storing the file %.2f s, building the curves %.2f s\n",
              storedSecs, secs - storedSecs);
  // On a shared machine the wall time above is mostly waiting for a core; the CPU time is what
  // the opening itself costs, and over the cores this machine has, a floor for its wall time.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("  CPU time of the opening, all threads: %.2f s (%.2f s over %u cores)\n", cpuSecs,
              cpuSecs / cores, cores);
  ok = ok && s.max < 50;
  // Fully charted within 3 s at 8 x 1M points: proportionally less for a smaller run.
  const double target = 3.0 * double(perRank) / 1e6;
  std::printf("  opened and fully charted in %.2f s (target <= %.2f s at this size: %s)\n", secs,
              target, secs <= target ? "met" : "NOT met");
  const long points = long(kRanks) * perRank;
  std::printf(
      "  memory: %.0f bytes per stored point (resident growth while opening: the store's"
      " columns, global series and chart curves, over %ld rank points)\n",
      double(residentBytes() - rss0) / double(points), points);
  // BEGIN accounting: where those bytes are, counted (chunks whole, as allocated).
  {
    const MetricsStore* store = panel.lossChart()->sources().front().store;
    auto columnBytes = [](const ColumnView& c) {
      return double((c.size() + Column::kChunk - 1) / Column::kChunk * Column::kChunkBytes);
    };
    double ranks = 0, global = 0;
    for (int r = 0; r < store->rankCount(); ++r) {
      const StepSeries& s = store->rankSeries(r);
      for (const Column* c : {&s.step, &s.loss, &s.samples, &s.time, &s.samplesPerSec, &s.epoch})
        ranks += columnBytes(*c);
    }
    const GlobalSeries& g = store->global();
    for (const Column* c : {&g.step, &g.loss, &g.samples, &g.time, &g.samplesPerSec, &g.epoch})
      global += columnBytes(*c);
    double curves[2] = {0, 0};
    const SeriesChart* charts[2] = {panel.lossChart(), panel.throughputChart()};
    for (int k = 0; k < 2; ++k)
      for (const QString& name : charts[k]->curveNames())
        curves[k] += double(charts[k]->curve(name)->data().ownBytes());
    const double p = double(points);
    std::printf(
        "  memory counted, per rank point: store %.1f (rank columns %.1f: step, loss, samples,"
        " time, samples/s, epoch; global series %.1f), curves' own %.1f (loss %.1f, throughput"
        " %.1f: smoothed values and min/max pyramids; keys and raw values are the store's);"
        " %.1f in all\n",
        (ranks + global) / p, ranks / p, global / p, (curves[0] + curves[1]) / p, curves[0] / p,
        curves[1] / p, (ranks + global + curves[0] + curves[1]) / p);
  }
  // END accounting
  // Side by side: the file's first lines decoded on one core by each decoder.
  {
    QFile file(RunDirectory::metricsPath(runDir));
    if (!file.open(QIODevice::ReadOnly)) return false;
    const QByteArray head = file.read(64 << 20);
    const qint64 fileBytes = file.size();
    std::vector<std::string_view> lines;
    for (qsizetype p = 0; p < head.size();) {
      const qsizetype nl = head.indexOf('\n', p);
      if (nl < 0) break;
      lines.emplace_back(head.constData() + p, std::size_t(nl - p));
      p = nl + 1;
    }
    auto perLine = [&](wire::Decoded (*decoder)(std::string_view), std::size_t n) {
      QElapsedTimer u;
      u.start();
      std::size_t good = 0;
      for (std::size_t i = 0; i < n; ++i) good += decoder(lines[i]).message.has_value();
      return good == n ? double(u.nsecsElapsed()) * 1e-9 / double(n) : -1.0;
    };
    const std::size_t n = std::min<std::size_t>(lines.size(), 200000);
    const double ours = perLine(&wire::decode, n);
    const double peer = perLine(&bench::decodeWithNlohmann, std::min<std::size_t>(n, 50000));
    const double allLines = double(fileBytes) / double(head.size()) * double(lines.size());
    std::printf(
        "  decoding the file on one core: %.2f us/line (%.1f s for all of it); peer"
        " nlohmann-json: %.2f us/line (%.1f s: the previous loader's lower bound)\n",
        ours * 1e6, ours * allLines, peer * 1e6, peer * allLines);
    ok = ok && ours > 0 && peer > 0;
  }
  const bool all = panel.lossChart()->curve("rank 7") &&
                   panel.lossChart()->curve("rank 7")->size() == int(perRank);
  std::printf("  every point loaded and drawn: %s\n", all ? "yes" : "NO");
  ok = ok && all;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  setvbuf(stdout, nullptr, _IONBF, 0);
  // --history: only the opening from the history (section 3's last part), for side-by-side runs.
  const bool historyOnly = argc > 1 && std::strcmp(argv[argc - 1], "--history") == 0;
  if (historyOnly) --argc;
  const bool full = argc > 1 && std::strcmp(argv[1], "--full") == 0;
  const long perRank = full ? 1000000 : argc > 1 ? std::atol(argv[1]) : 250000;
  const double seconds = !full && argc > 2 ? std::atof(argv[2]) : 10.0;
  const double rate = !full && argc > 3 ? std::atof(argv[3]) : 10000.0;
  bool ok = true;
  if (historyOnly) return openFromHistory(perRank) ? 0 : 1;

  // --- 1. replot time ----------------------------------------------------------------------
  std::printf("bench_replot: loss chart, %d ranks x %ld points (+ global), 1400x600 px\n", kRanks,
              perRank);
  MetricsStore big;
  QElapsedTimer t;
  t.start();
  fill(big, perRank);
  std::printf("  filled the store in %.2f s\n", double(t.nsecsElapsed()) * 1e-9);
  {
    LossChart chart;
    chart.resize(1400, 600);
    chart.show();
    QApplication::processEvents();
    chart.setSmoothing(0.6);
    t.restart();
    chart.setSources({{"bench", &big}});
    waitUntil([&] { return !chart.isLoading(); });
    std::printf("  first build of every curve (raw + smoothed, on a worker thread): %.0f ms\n",
                double(t.nsecsElapsed()) * 1e-6);
    Stats s = timeReplots(chart.plot(), 20);
    printReplot("replot, smoothing 0.6 (raw faint + smoothed)", s);
    ok = ok && s.median < 30;
    chart.setSmoothing(0);  // with this many points, rebuilt on the worker thread
    waitUntil([&] { return !chart.isLoading(); });
    s = timeReplots(chart.plot(), 20);
    printReplot("replot, smoothing off", s);
    chart.setSmoothing(0.6);
    waitUntil([&] { return !chart.isLoading(); });
    chart.setLogY(true);
    s = timeReplots(chart.plot(), 20);
    printReplot("replot, smoothing 0.6, log y", s);
    chart.setLogY(false);
    const QCPRange x = chart.plot()->xAxis->range();
    chart.plot()->xAxis->setRange(x.center(), x.center() + x.size() / 20);
    s = timeReplots(chart.plot(), 20);
    printReplot("replot, zoomed to 5% of x", s);
    chart.resetView();
    // A live update: a few new points per rank, fed and redrawn.
    std::vector<double> ms;
    for (int k = 0; k < 20; ++k) {
      std::vector<wire::Message> batch;
      for (int r = 0; r < kRanks; ++r)
        for (int j = 1; j <= 8; ++j) batch.push_back(makeStep(r, perRank + k * 8 + j));
      big.ingest(batch);
      QElapsedTimer u;
      u.start();
      chart.sync();
      chart.plot()->replot(QCustomPlot::rpImmediateRefresh);
      ms.push_back(double(u.nsecsElapsed()) * 1e-6);
    }
    printReplot("live update (64 new points) + replot", stats(ms));
  }

  // --- 2. event-loop latency while streaming ----------------------------------------------
  auto stream = [&](MetricsStore& store, long startStep, bool logLines, const char* what) {
    LivePanel panel(store);
    waitUntil([&] { return !panelLoading(*panel.charts); });  // curves built, as in a live run
    QApplication::processEvents();
    long received = 0;
    const Stats s = streamAndMeasure(store, panel, startStep, seconds, rate, logLines, &received);
    std::printf(
        "  %-34s %ld msgs in %.0f s (%.0f/s); timer lateness median %.1f ms, p99 %.1f ms,"
        " max %.1f ms %s\n",
        what, received, seconds, double(received) / seconds, s.median, s.p99, s.max,
        s.max < 50 ? "(< 50 ms: met)" : "(>= 50 ms: NOT met)");
    return s;
  };
  std::printf("bench_replot: event loop while %d ranks stream %.0f msg/s in total for %.0f s\n",
              kRanks, rate, seconds);
  MetricsStore empty;
  empty.setWorld(kRanks);
  const Stats fresh = stream(empty, 0, false, "from an empty chart:");
  ok = ok && fresh.max < 50;
  const QByteArray onTop =
      QStringLiteral("on top of %1 x %2 points:").arg(kRanks).arg(perRank).toLatin1();
  stream(big, perRank + 1000, false, onTop.constData());
  MetricsStore chatty;
  chatty.setWorld(kRanks);
  stream(chatty, 0, true, "empty, + a log line per message:");
  // --- 3. GUI-thread stalls while loading 8 x 1M points (last: its gigabyte file and memory
  // churn would disturb the streaming measurements) ------------------------------------------
  std::printf(
      "bench_replot: GUI-thread stalls, charts panel (loss + throughput), %d x %ld points\n",
      kRanks, perRank);
  {
    ChartsPanel panel;
    panel.resize(1400, 1000);
    panel.show();
    QApplication::processEvents();
    double secs = 0;
    Stats s = measureStall(
        [&] {
          panel.setSources({{"bench", &big}}, true);
        },
        [&] { return !panelLoading(panel); }, &secs);
    printStall("showing the store (curves on a worker):", s, secs);
    bool stallOk = true;
    for (const auto& [axis, what] :
         {std::pair{XAxis::Samples, "x axis -> samples (curves on a worker):"},
          std::pair{XAxis::WallTime, "x axis -> wall time (curves on a worker):"},
          std::pair{XAxis::Step, "x axis -> step (curves on a worker):"}}) {
      s = measureStall([&, axis = axis] { panel.setXAxis(axis); },
                       [&] { return !panelLoading(panel); }, &secs);
      printStall(what, s, secs);
      stallOk = stallOk && s.max < 50;
    }
    s = measureStall([&] { panel.setSmoothing(0.3); }, [&] { return !panelLoading(panel); }, &secs);
    printStall("smoothing 0.6 -> 0.3 (curves on a worker):", s, secs);
    stallOk = stallOk && s.max < 50;
    ok = ok && stallOk;
    // The peer: every curve rebuilt on the GUI thread, as a chart without the worker would.
    for (SeriesChart* c : {static_cast<SeriesChart*>(panel.lossChart()),
                           static_cast<SeriesChart*>(panel.throughputChart())})
      c->setAsyncThreshold(std::numeric_limits<std::size_t>::max());
    s = measureStall([&] { panel.setXAxis(XAxis::WallTime); }, [&] { return !panelLoading(panel); },
                     &secs);
    printStall("peer: x axis -> wall time on the GUI thread:", s, secs);
  }
  ok = openFromHistory(perRank) && ok;
  return ok ? 0 : 1;
}

// bench_script_stream: how Python-script runs reach the window, with real python3 ranks.
//  1. 8 ranks logging through the client (python/ddpdesk) 1,000 times a second each, into a
//     MetricsServer -> MetricsStore -> the live panel (charts, rank table, log). The lag of a
//     log() call: from the call (a `sent_at` scalar holding time.time()) to the moment the
//     monitor has its message in the store, whose charts redraw from it at their next frame.
//     Target: under 100 ms. The GUI thread's 5 ms timer lateness meanwhile: under 50 ms.
//     Peer, in the same run: the same ranks writing the same lines to the socket themselves,
//     on the calling thread (what a client without its sender thread and queue would do).
//  2. A script run (task python, RunController as the window drives it) whose 2 ranks print
//     100,000 "loss=" lines a second together for a few seconds: the lines the monitor made
//     loss points of against the lines printed (kept up, or how many it dropped), how long the
//     run lasted, the monitor's CPU time per line (reading, the rank's log file, the loss
//     pattern, the store and the run's record, the Log tab, the charts) and the timer lateness
//     meanwhile. Peer, in the same run: the same two ranks unbuffered (as ddpdesk starts them)
//     with their output to /dev/null: their own CPU time per line, which competes with the
//     monitor's for the cores.
// Usage: QT_QPA_PLATFORM=offscreen bench_script_stream [seconds=10] [python=/usr/bin/python3]
//        [--print-only] (part 2 alone)
// Not a test: figures (docs/benchmarks.md).
#include <sys/resource.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_live_panel.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "run/run_controller.h"
#include "wire.h"

using namespace ddpdesk;
using namespace ddpdesk::bench;

namespace {

constexpr int kRanks = 8;
constexpr int kLogsPerRankPerS = 1000;

// A rank logging `rate` times a second for `seconds`, paced in 1 ms slices, through the client
// (argv[3] == "client") or writing the wire lines itself (the peer).
const char* kLoggingRank = R"PY(
import os, socket, sys, time
seconds, rate, how = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
rank = int(os.environ["RANK"])
if how == "client":
    import ddpdesk
    def log(i):
        ddpdesk.log(step=i, loss=1.0 / i, samples=i * 64, sent_at=time.time())
else:
    # The client's own line builders (outside ddpdesk, importing it starts nothing).
    from ddpdesk import _wire
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["BENCH_SOCKET"])
    s.sendall((_wire.hello(os.environ["BENCH_TOKEN"], rank, int(os.environ["WORLD_SIZE"]),
                           os.getpid(), "bench", "cpu") + "\n").encode())
    t0 = time.monotonic()
    name = _wire.text("sent_at")
    def log(i):
        t = _wire.number(time.monotonic() - t0)
        s.sendall((_wire.step(rank, 0, i, 1.0 / i, 1.0 / i, i * 64, 0.01, t, 0) + "\n" +
                   _wire.gauge(rank, name, time.time(), t, i) + "\n").encode())
start = time.monotonic()
i = 0
while True:
    elapsed = time.monotonic() - start
    if elapsed >= seconds:
        break
    while i < elapsed * rate:
        i += 1
        log(i)
    time.sleep(0.001)
)PY";

// A rank printing `rate` "loss=" lines a second for `seconds` (1 ms slices), then how many it
// printed to <count file>-<RANK>.
const char* kPrintingRank = R"PY(
import os, sys, time
seconds, rate, count_file = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
count_file += "-" + os.environ.get("RANK", "0")
out = sys.stdout
start = time.monotonic()
i = 0
while True:
    elapsed = time.monotonic() - start
    if elapsed >= seconds:
        break
    while i < elapsed * rate:
        i += 1
        out.write("step %d loss=%.6f\n" % (i, 1.0 / i))
    out.flush()
    time.sleep(0.001)
open(count_file, "w").write(str(i))
)PY";

// CPU seconds (user + system) of this process, or of its reaped children.
double cpuSeconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

QString writeScript(const QTemporaryDir& dir, const char* name, const char* text) {
  const QString path = dir.filePath(QString::fromLatin1(name));
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write(text);
  return path;
}

// Runs the event loop until every process ended (and `extraMs` after it).
void runUntilEnded(std::vector<std::unique_ptr<QProcess>>& procs, int extraMs) {
  QEventLoop loop;
  QTimer poll;
  poll.setInterval(20);
  QObject::connect(&poll, &QTimer::timeout, [&] {
    for (auto& p : procs)
      if (p->state() != QProcess::NotRunning) return;
    poll.stop();
    QTimer::singleShot(extraMs, &loop, &QEventLoop::quit);
  });
  poll.start();
  loop.exec();
}

struct StreamResult {
  long steps = 0;
  Stats lagMs, latenessMs;
};

// Part 1: 8 logging ranks into the live panel, through the client or (peer) directly.
StreamResult streamRanks(const QString& python, const QString& script, double seconds,
                         bool client) {
  MetricsStore store;
  store.setWorld(kRanks);
  LivePanel panel(store);
  MetricsServer server;
  QString error;
  if (!server.listen(QStringLiteral("bench-token"), kRanks, &error)) {
    std::fprintf(stderr, "bench_script_stream: %s\n", qPrintable(error));
    return {};
  }
  StreamResult r;
  std::vector<double> lag;
  QObject::connect(&server, &MetricsServer::messagesReceived,
                   [&](const std::vector<wire::Message>& batch, const QByteArray&) {
                     store.ingest(batch);
                     // time.time()'s clock, to the microsecond.
                     const double now = std::chrono::duration<double>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count();
                     for (const auto& m : batch) {
                       if (std::holds_alternative<wire::Step>(m)) ++r.steps;
                       if (const auto* g = std::get_if<wire::Gauge>(&m); g && g->name == "sent_at")
                         lag.push_back((now - g->value) * 1000.0);
                     }
                   });
  // Measured once every rank is in: python3 starting 8 times on a small machine is not the
  // monitor's doing.
  TimerLateness lateness;
  int connected = 0;
  QObject::connect(&server, &MetricsServer::peerAuthenticated, [&] {
    if (++connected == kRanks) lateness.start();
  });
  std::vector<std::unique_ptr<QProcess>> procs;
  for (int rank = 0; rank < kRanks; ++rank) {
    auto p = std::make_unique<QProcess>();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // The client finds the monitor by DDPDESK_MONITOR; the peer must not start a client.
    env.insert(client ? QStringLiteral("DDPDESK_MONITOR") : QStringLiteral("BENCH_SOCKET"),
               server.socketPath());
    env.insert(client ? QStringLiteral("DDPDESK_TOKEN") : QStringLiteral("BENCH_TOKEN"),
               QStringLiteral("bench-token"));
    env.insert(QStringLiteral("RANK"), QString::number(rank));
    env.insert(QStringLiteral("WORLD_SIZE"), QString::number(kRanks));
    env.insert(QStringLiteral("PYTHONPATH"), QStringLiteral(DDPDESK_SOURCE_DIR "/python"));
    p->setProcessEnvironment(env);
    p->setProcessChannelMode(QProcess::ForwardedErrorChannel);
    p->start(python, {script, QString::number(seconds), QString::number(kLogsPerRankPerS),
                      client ? QStringLiteral("client") : QStringLiteral("direct")});
    procs.push_back(std::move(p));
  }
  runUntilEnded(procs, 500);
  r.lagMs = stats(lag);
  r.latenessMs = lateness.result();
  return r;
}

// Part 2: a script run printing `rate` lines a second over 2 ranks, as the window runs it.
void floodRun(const QString& python, const QString& script, const QTemporaryDir& dir,
              double seconds, double rate) {
  RunController controller;
  controller.setWorkerProgram(QStringLiteral(DDPDESK_WORKER));
  LivePanel* panel = nullptr;
  long lines = 0;
  // Measured once both ranks print (python3 starting is not the monitor's doing).
  TimerLateness lateness;
  bool heard[2] = {false, false};
  QObject::connect(&controller, &RunController::logLine,
                   [&](int rank, bool isStderr, const QString& line) {
                     ++lines;
                     if (panel) panel->log->appendLine(rank, isStderr, line);
                     if (rank >= 0 && rank < 2 && !heard[rank]) {
                       heard[rank] = true;
                       if (heard[0] && heard[1]) lateness.start();
                     }
                   });
  RunSpec spec;
  spec.task = "python";
  spec.script = script.toStdString();
  spec.python = python.toStdString();
  spec.nproc = 2;
  spec.run_dir = dir.filePath(QStringLiteral("flood-run")).toStdString();
  // Each rank writes its count to <run_dir>/printed-<RANK>.
  spec.script_args =
      QStringLiteral("%1 %2 {run_dir}/printed").arg(seconds).arg(rate / 2).toStdString();
  QString error;
  panel = new LivePanel(*controller.store());
  QElapsedTimer clock;
  clock.start();
  const double selfBefore = cpuSeconds(RUSAGE_SELF), ranksBefore = cpuSeconds(RUSAGE_CHILDREN);
  if (!controller.start(spec, &error)) {
    std::fprintf(stderr, "bench_script_stream: %s\n", qPrintable(error));
    return;
  }
  QEventLoop loop;
  QObject::connect(&controller, &RunController::stateChanged, [&] {
    if (!controller.isActive()) loop.quit();
  });
  loop.exec();
  const double wall = double(clock.elapsed()) / 1000.0;
  const double monitorCpu = cpuSeconds(RUSAGE_SELF) - selfBefore;
  const double ranksCpu = cpuSeconds(RUSAGE_CHILDREN) - ranksBefore;
  long points = 0;
  for (int rank = 0; rank < 2; ++rank)
    points += long(controller.store()->rankSeries(rank).step.size());
  long printed = 0;
  for (int rank = 0; rank < 2; ++rank) {
    QFile count(dir.filePath(QStringLiteral("flood-run/printed-%1").arg(rank)));
    if (count.open(QIODevice::ReadOnly)) printed += count.readAll().trimmed().toLong();
  }
  const Stats late = lateness.result();
  std::printf(
      "  script run, 2 ranks asked for %.0f lines/s for %.0f s: %ld printed, %ld reached the "
      "monitor, %ld loss points charted %s; the run lasted %.1f s; the monitor's CPU %.2f s "
      "(%.1f us a line), the ranks' %.2f s (%.1f us a line); timer lateness median %.1f ms, "
      "p99 %.1f ms, max %.1f ms %s\n",
      rate, seconds, printed, lines, points, points == printed ? "(kept up)" : "(NOT kept up)",
      wall, monitorCpu, monitorCpu * 1e6 / double(std::max(1L, lines)), ranksCpu,
      ranksCpu * 1e6 / double(std::max(1L, printed)), late.median, late.p99, late.max,
      late.max < 50 ? "(< 50 ms: met)" : "(>= 50 ms: NOT met)");
  delete panel;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QStringList args = app.arguments().mid(1);
  const bool printOnly = args.removeAll(QStringLiteral("--print-only")) > 0;
  const double seconds = args.size() > 0 ? args[0].toDouble() : 10.0;
  const QString python = args.size() > 1 ? args[1] : QStringLiteral("/usr/bin/python3");
  QTemporaryDir dir;
  const QString logging = writeScript(dir, "logging_rank.py", kLoggingRank);
  std::printf("bench_script_stream: %d python3 ranks x %d logs/s for %.0f s into the live panel\n",
              kRanks, kLogsPerRankPerS, seconds);
  for (const bool client : {true, false}) {
    if (printOnly) break;
    const StreamResult r = streamRanks(python, logging, seconds, client);
    std::printf(
        "  %-30s %ld steps (%.0f/s); lag median %.1f ms, p99 %.1f ms, max %.1f ms %s; timer "
        "lateness median %.1f ms, max %.1f ms %s\n",
        client ? "through the client:" : "peer, written by the rank:", r.steps,
        double(r.steps) / seconds, r.lagMs.median, r.lagMs.p99, r.lagMs.max,
        r.lagMs.max < 100 ? "(< 100 ms: met)" : "(>= 100 ms: NOT met)", r.latenessMs.median,
        r.latenessMs.max, r.latenessMs.max < 50 ? "(< 50 ms: met)" : "(>= 50 ms: NOT met)");
  }
  const QString printing = writeScript(dir, "printing_rank.py", kPrintingRank);
  std::printf("bench_script_stream: a script run printing 100,000 lines/s\n");
  {
    // The peer: the same two ranks as ddpdesk starts them (unbuffered), output to /dev/null.
    const double before = cpuSeconds(RUSAGE_CHILDREN);
    std::vector<std::unique_ptr<QProcess>> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      auto p = std::make_unique<QProcess>();
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert(QStringLiteral("PYTHONUNBUFFERED"), QStringLiteral("1"));
      env.insert(QStringLiteral("RANK"), QString::number(rank));
      p->setProcessEnvironment(env);
      p->setStandardOutputFile(QStringLiteral("/dev/null"));
      p->start(python, {printing, QString::number(seconds / 2), QStringLiteral("50000"),
                        dir.filePath(QStringLiteral("alone"))});
      ranks.push_back(std::move(p));
    }
    for (auto& p : ranks) p->waitForFinished(-1);
    long printed = 0;
    for (int rank = 0; rank < 2; ++rank) {
      QFile count(dir.filePath(QStringLiteral("alone-%1").arg(rank)));
      if (count.open(QIODevice::ReadOnly)) printed += count.readAll().trimmed().toLong();
    }
    const double cpu = cpuSeconds(RUSAGE_CHILDREN) - before;
    std::printf(
        "  peer: the same 2 ranks alone, output to /dev/null: %ld lines, their CPU %.2f s "
        "(%.1f us a line)\n",
        printed, cpu, cpu * 1e6 / double(std::max(1L, printed)));
  }
  floodRun(python, printing, dir, seconds / 2, 100000);
  return 0;
}

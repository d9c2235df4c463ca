// MetricsStore: every point kept in order, notifications coalesced, global and eval series
// deduplicated across ranks, resumes, loading a metrics.jsonl back.
#include <QElapsedTimer>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QtTest>
#include <cmath>
#include <limits>

#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "wire.h"

using namespace ddpdesk;

namespace {

wire::Step step(int rank, std::int64_t n, double t = 0) {
  wire::Step s;
  s.rank = rank;
  s.epoch = int(n / 100);
  s.step = n;
  s.loss = 1.0 / double(n + 1) + rank;
  s.global_loss = 1.0 / double(n + 1);
  s.samples = n * 16;
  s.time = t > 0 ? t : double(n) * 0.01;
  s.samples_per_s = 1600;
  return s;
}

wire::Event makeEvent(int rank, const char* name, std::int64_t at = 0, std::int64_t total = 0) {
  wire::Event e;
  e.rank = rank;
  e.event = name;
  e.step = at;
  e.total_steps = total;
  return e;
}

wire::Hello hello(int rank, int world) {
  return wire::Hello{wire::kVersion, "", rank, world, 100 + rank, "host", "cpu"};
}

void writeRun(const QString& path, int ranks, int n) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  for (int r = 0; r < ranks; ++r)
    f.write(QByteArray::fromStdString(wire::encode(hello(r, ranks)) + "\n"));
  for (int i = 1; i <= n; ++i)
    for (int r = 0; r < ranks; ++r)
      f.write(QByteArray::fromStdString(wire::encode(step(r, i)) + "\n"));
}

}  // namespace

class TestMetricsStore : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void keepsEveryPointInOrder() {
    MetricsStore store;
    const int ranks = 4, n = 50000;
    std::vector<wire::Message> batch;
    for (int i = 1; i <= n; ++i) {
      for (int r = 0; r < ranks; ++r) batch.push_back(step(r, i));
      if (batch.size() >= 1000) {
        store.ingest(batch);
        batch.clear();
      }
    }
    store.ingest(batch);
    QCOMPARE(store.rankCount(), ranks);
    for (int r = 0; r < ranks; ++r) {
      const StepSeries& s = store.rankSeries(r);
      QCOMPARE(int(s.size()), n);
      QCOMPARE(int(s.loss.size()), n);
      QCOMPARE(int(s.time.size()), n);
      QCOMPARE(int(s.samples.size()), n);
      QCOMPARE(int(s.samplesPerSec.size()), n);
      for (int i = 0; i < n; ++i) {
        if (s.step[i] != i + 1 || s.loss[i] != 1.0 / (i + 2) + r)
          QFAIL(qPrintable(QStringLiteral("rank %1 point %2 wrong").arg(r).arg(i)));
      }
    }
    // Global: one point per step although four ranks reported each.
    QCOMPARE(int(store.global().size()), n);
    QCOMPARE(store.global().loss.back(), 1.0 / (n + 1));
    QCOMPARE(store.messageCount(), qint64(ranks) * n);
  }

  void notificationsAreCoalesced() {
    MetricsStore store;
    QSignalSpy updated(&store, &MetricsStore::updated);
    // Thousands of ingests without the event loop running: not one signal yet...
    for (int i = 1; i <= 10000; ++i) store.ingest(step(0, i));
    QCOMPARE(updated.count(), 0);
    // ...then exactly one, carrying the latest revision.
    QTRY_COMPARE_WITH_TIMEOUT(updated.count(), 1, 10000);
    QCOMPARE(updated.at(0).at(0).toULongLong(), store.revision());
    QTest::qWait(200);
    QCOMPARE(updated.count(), 1);  // nothing new, nothing emitted
  }

  void notificationRateIsBounded() {
    MetricsStore store;
    QSignalSpy updated(&store, &MetricsStore::updated);
    QElapsedTimer t;
    t.start();
    int i = 0;
    while (t.elapsed() < 600) {
      for (int k = 0; k < 20; ++k) store.ingest(step(0, ++i));
      QCoreApplication::processEvents();
    }
    const qint64 elapsed = t.elapsed();
    QCoreApplication::processEvents();
    // At most one per 50 ms interval (plus the one in flight), whatever the message rate.
    QVERIFY2(updated.count() <= elapsed / 50 + 2,
             qPrintable(QStringLiteral("%1 signals in %2 ms for %3 messages")
                            .arg(updated.count())
                            .arg(elapsed)
                            .arg(i)));
    QVERIFY(updated.count() >= 1);
    QCOMPARE(int(store.rankSeries(0).size()), i);
  }

  void flushEmitsAtOnce() {
    MetricsStore store;
    QSignalSpy updated(&store, &MetricsStore::updated);
    store.ingest(step(0, 1));
    store.flush();
    QCOMPARE(updated.count(), 1);
    store.flush();
    QCOMPARE(updated.count(), 1);
  }

  void changedSinceRevision() {
    MetricsStore store;
    store.ingest(std::vector<wire::Message>{step(0, 1), step(1, 1)});
    const quint64 drawn = store.revision();
    QCOMPARE(store.ranksChangedSince(0), (std::vector<int>{0, 1}));
    QVERIFY(store.ranksChangedSince(drawn).empty());
    store.ingest(step(1, 2));
    QCOMPARE(store.ranksChangedSince(drawn), (std::vector<int>{1}));
    QVERIFY(store.global().revision > drawn);
    QVERIFY(store.evals().revision <= drawn);
  }

  void evalsAreMergedAcrossRanks() {
    MetricsStore store;
    for (int r = 0; r < 3; ++r) {
      wire::Eval e;
      e.rank = r;
      e.epoch = 0;
      e.step = 10;
      e.loss = 0.5;
      e.accuracy = 0.8;
      store.ingest(e);
    }
    wire::Eval e2;
    e2.epoch = 1;
    e2.step = 20;
    e2.loss = 0.4;
    store.ingest(e2);
    // A slower rank's copy of the first one arrives after the second: still one point each.
    wire::Eval late;
    late.rank = 2;
    late.epoch = 0;
    late.step = 10;
    late.loss = 0.5;
    store.ingest(late);
    QCOMPARE(int(store.evals().size()), 2);
    QCOMPARE(store.evals().accuracy[0], 0.8);
    QVERIFY(std::isnan(store.evals().accuracy[1]));
    QCOMPARE(store.progress().evalLoss, 0.4);
  }

  void resumeRestartsTheGlobalSeries() {
    MetricsStore store;
    store.ingest(std::vector<wire::Message>{hello(0, 2), hello(1, 2)});
    for (int i = 1; i <= 10; ++i) store.ingest(std::vector<wire::Message>{step(0, i), step(1, i)});
    // Resumed from a checkpoint at step 6: a new session goes back to step 7.
    store.ingest(std::vector<wire::Message>{hello(0, 2), hello(1, 2)});
    for (int i = 7; i <= 12; ++i) store.ingest(std::vector<wire::Message>{step(1, i), step(0, i)});
    const GlobalSeries& g = store.global();
    QCOMPARE(int(g.size()), 16);
    QCOMPARE(g.step[10], 7.0);
    QCOMPARE(g.step.back(), 12.0);
    QCOMPARE(int(store.rankSeries(0).size()), 16);
  }

  // A resumed run's length is its latest session's, also when that is shorter (fewer epochs)
  // and whichever order the sessions' lines come in (the history is read beside the stream).
  void theLatestSessionGivesTheRunsLength() {
    MetricsStore store;
    store.ingest(makeEvent(0, "started", 0, 500));
    store.ingest(makeEvent(0, "started", 150, 200));  // resumed at 150 for 200 in all
    QCOMPARE(store.progress().totalSteps, 200);
    MetricsStore reversed;
    reversed.ingest(makeEvent(0, "started", 150, 200));
    reversed.ingest(makeEvent(1, "started", 150, 200));
    reversed.ingest(makeEvent(0, "started", 0, 500));
    QCOMPARE(reversed.progress().totalSteps, 200);
  }

  void progressAndEta() {
    MetricsStore store;
    store.setWorld(2);
    store.ingest(makeEvent(0, "started", 0, 100));
    for (int i = 1; i <= 50; ++i) store.ingest(step(0, i, i * 0.1));  // 10 steps/s
    const RunProgress p = store.progress();
    QCOMPARE(p.world, 2);
    QCOMPARE(p.step, 50);
    QCOMPARE(p.totalSteps, 100);
    QCOMPARE(p.samples, 800);
    QVERIFY(std::fabs(p.etaSeconds - 5.0) < 1e-6);
    QCOMPARE(p.globalLoss, 1.0 / 51);
  }

  void ranksInfoFromHelloEventsErrors() {
    MetricsStore store;
    wire::Event ck = makeEvent(0, "checkpoint", 5);
    ck.path = "/runs/x/checkpoint-5.pt";
    store.ingest(
        std::vector<wire::Message>{hello(1, 2), step(1, 3), ck, wire::Error{1, "out of memory"}});
    QCOMPARE(store.rankInfo(1).pid, 101);
    QCOMPARE(store.rankInfo(1).host, QStringLiteral("host"));
    QCOMPARE(store.rankInfo(1).step, 3);
    QCOMPARE(store.rankInfo(1).error, QStringLiteral("out of memory"));
    QCOMPARE(store.rankInfo(0).lastEvent, QStringLiteral("checkpoint"));
    QCOMPARE(store.progress().lastCheckpoint, QStringLiteral("/runs/x/checkpoint-5.pt"));
    QCOMPARE(int(store.events().size()), 1);
    QCOMPARE(int(store.errors().size()), 1);
    QVERIFY(!store.rankInfo(7).seen);  // unknown ranks read as empty
    QCOMPARE(int(store.rankSeries(7).size()), 0);
    // A new hello is a new life of the rank (a restart): the last one's error and event go,
    // the run's list of errors keeps them.
    store.ingest(std::vector<wire::Message>{hello(1, 2), hello(0, 2)});
    QVERIFY(store.rankInfo(1).error.isEmpty());
    QVERIFY(store.rankInfo(0).lastEvent.isEmpty());
    QCOMPARE(int(store.errors().size()), 1);
  }

  // A NaN or infinite loss is said once per rank (the script goes on; the warning is the
  // controller's), again after a clear; finite losses and a loaded file say nothing.
  void aNonFiniteLossIsSaidOncePerRank() {
    MetricsStore store;
    QSignalSpy said(&store, &MetricsStore::nonFiniteLoss);
    store.ingest(step(0, 1));
    wire::Step bad = step(1, 7);
    bad.loss = std::numeric_limits<double>::quiet_NaN();
    store.ingest(std::vector<wire::Message>{step(0, 2), bad});
    QCOMPARE(said.count(), 1);
    QCOMPARE(said.at(0).at(0).toInt(), 1);
    QCOMPARE(said.at(0).at(1).toLongLong(), 7LL);
    bad.step = 8;
    store.ingest(bad);  // the same rank again: already said
    wire::Step inf = step(0, 9);
    inf.loss = std::numeric_limits<double>::infinity();
    store.ingest(inf);
    QCOMPARE(said.count(), 2);
    QCOMPARE(said.at(1).at(0).toInt(), 0);
    store.clear();
    store.ingest(bad);
    QCOMPARE(said.count(), 3);
  }

  void clearEmitsReset() {
    MetricsStore store;
    QSignalSpy reset(&store, &MetricsStore::reset);
    store.ingest(step(0, 1));
    store.clear();
    QCOMPARE(reset.count(), 1);
    QCOMPARE(store.rankCount(), 0);
    QCOMPARE(int(store.global().size()), 0);
  }

  void loadsMetricsJsonl() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("metrics.jsonl"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(wire::encode(hello(0, 2)) + "\n"));
    f.write(QByteArray::fromStdString(wire::encode(makeEvent(0, "started", 0, 30)) + "\n"));
    for (int i = 1; i <= 30; ++i)
      for (int r = 0; r < 2; ++r)
        f.write(QByteArray::fromStdString(wire::encode(step(r, i)) + "\n"));
    f.write("garbage\n\n{\"type\":\"eval\"}\n");
    f.write(QByteArray::fromStdString(wire::encode(step(0, 31))));  // last line, no newline
    f.close();

    MetricsStore store;
    store.ingest(step(5, 1));  // replaced by the load
    QSignalSpy updated(&store, &MetricsStore::updated);
    const auto r = store.loadJsonl(path);
    QVERIFY2(r.ok, qPrintable(r.error));
    QCOMPARE(r.messages, 2 + 60 + 1);
    QCOMPARE(r.malformed, 2);
    QCOMPARE(updated.count(), 1);
    QCOMPARE(store.rankCount(), 2);
    QCOMPARE(int(store.rankSeries(0).size()), 31);
    QCOMPARE(int(store.rankSeries(1).size()), 30);
    QCOMPARE(int(store.global().size()), 31);
    QCOMPARE(store.progress().totalSteps, 30);

    QVERIFY(!store.loadJsonl(dir.filePath(QStringLiteral("missing.jsonl"))).ok);
  }

  // Read on a worker thread: the store keeps its content until the file is in, then holds every
  // point of the file once, in order, plus what was ingested meanwhile, once, after it. The file
  // spans several of the loader's blocks (16 MB; one is applied while the next decodes).
  void loadsAsynchronouslyEveryPointOnce() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("metrics.jsonl"));
    const int ranks = 4, n = 30000;
    writeRun(path, ranks, n);
    QVERIFY(QFileInfo(path).size() > (16 << 20));

    MetricsStore store;
    store.ingest(step(7, 1));  // replaced by the load
    QSignalSpy reset(&store, &MetricsStore::reset);
    QSignalSpy loaded(&store, &MetricsStore::loaded);
    store.loadJsonlAsync(path);
    QVERIFY(store.isLoading());
    QCOMPARE(store.rankCount(), 8);                                // untouched until the file is in
    for (int r = 0; r < ranks; ++r) store.ingest(step(r, n + 1));  // arrives during the load
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 60000);
    QVERIFY(!store.isLoading());
    QCOMPARE(reset.count(), 1);
    const auto r = loaded.at(0).at(0).value<MetricsStore::LoadResult>();
    QVERIFY2(r.ok, qPrintable(r.error));
    QCOMPARE(r.messages, qint64(ranks) * n + ranks);
    QCOMPARE(store.rankCount(), ranks);
    for (int k = 0; k < ranks; ++k) {
      const StepSeries& s = store.rankSeries(k);
      QCOMPARE(int(s.size()), n + 1);
      for (int i = 0; i < n + 1; ++i) QCOMPARE(s.step[std::size_t(i)], double(i + 1));
      QCOMPARE(s.loss[std::size_t(n)], step(k, n + 1).loss);
    }
    QCOMPARE(int(store.global().size()), n + 1);
    QVERIFY(store.rankSeries(0).revision <= store.revision());
  }

  // A line longer than one of the loader's 16 MB blocks (garbage, say) is one malformed line:
  // the lines around it load, and the blocks after it still split at the right places.
  void aLineLongerThanABlockIsOneMalformedLine() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("metrics.jsonl"));
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray::fromStdString(wire::encode(step(0, 1)) + "\n"));
      f.write(QByteArray((16 << 20) + 12345, 'x'));
      f.write("\n");
      for (int i = 2; i <= 20000; ++i)
        f.write(QByteArray::fromStdString(wire::encode(step(0, i)) + "\n"));
    }
    MetricsStore store;
    const auto r = store.loadJsonl(path);
    QVERIFY2(r.ok, qPrintable(r.error));
    QCOMPARE(r.malformed, qint64(1));
    QCOMPARE(r.messages, qint64(20000));
    const StepSeries& s = store.rankSeries(0);
    QCOMPARE(int(s.size()), 20000);
    for (int i = 0; i < 20000; ++i) QCOMPARE(s.step[std::size_t(i)], double(i + 1));
  }

  void clearDropsARunningLoad() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("metrics.jsonl"));
    writeRun(path, 2, 5000);
    MetricsStore store;
    QSignalSpy loaded(&store, &MetricsStore::loaded);
    store.loadJsonlAsync(path);
    store.clear();
    QVERIFY(!store.isLoading());
    store.loadJsonlAsync(dir.filePath(QStringLiteral("missing.jsonl")));
    store.ingest(step(0, 1));
    QThreadPool::globalInstance()->waitForDone();  // both reads are done; their ends are queued
    QTRY_COMPARE(loaded.count(), 1);               // only the second load reports
    QVERIFY(!loaded.at(0).at(0).value<MetricsStore::LoadResult>().ok);
    QCOMPARE(store.rankCount(), 1);  // the message ingested during the failed load
    QCOMPARE(int(store.rankSeries(0).size()), 1);
    QTest::qWait(50);
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(int(store.global().size()), 1);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestMetricsStore)
#include "test_metrics_store.moc"

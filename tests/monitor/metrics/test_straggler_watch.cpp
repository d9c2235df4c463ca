// StragglerWatch following a MetricsStore: intervals assembled from ranks' messages that arrive in
// any order, flagged / cleared / changed signals, a store without breakdowns, a store cleared,
// and a metrics.jsonl loaded from disk.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "breakdown_test_util.h"
#include "metrics/metrics_store.h"
#include "metrics/straggler_watch.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {

// Step messages of `intervals` log intervals (numbered every 5 steps, each breakdown long enough
// for the straggler rule's minimum duration) from `world` ranks, rank `slow` slowed in its data
// loading; rank order reversed so the slow rank's messages come first.
std::vector<wire::Message> run(int world, int slow, int intervals, int firstInterval = 1) {
  std::vector<wire::Message> out;
  for (int i = firstInterval; i < firstInterval + intervals; ++i)
    for (int r = world - 1; r >= 0; --r)
      out.push_back(stepMessage(r, 5 * i,
                                r == slow ? slowTimes(&wire::StepTimes::data, 20.0, kStragglerSteps)
                                          : normalTimes(kStragglerSteps)));
  return out;
}

}  // namespace

class TestStragglerWatch : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void flagsAndClearsFromTheStore() {
    MetricsStore store;
    store.setWorld(2);
    StragglerWatch watch;
    watch.setStore(&store);
    QSignalSpy flagged(&watch, &StragglerWatch::flagged);
    QSignalSpy cleared(&watch, &StragglerWatch::cleared);
    QSignalSpy changed(&watch, &StragglerWatch::changed);

    store.ingest(run(2, 1, 2));
    store.flush();
    QCOMPARE(flagged.count(), 0);
    store.ingest(run(2, 1, 1, 3));
    // Through the store's coalescing timer, as in a live run.
    QTRY_COMPARE(flagged.count(), 1);
    QCOMPARE(flagged.at(0).at(0).toInt(), 1);
    QVERIFY(flagged.at(0).at(1).toString().contains(QStringLiteral("mostly data")));
    QVERIFY(watch.isFlagged(1));
    QVERIFY(!watch.isFlagged(0));
    QVERIFY(changed.count() >= 1);
    QVERIFY(watch.summary().startsWith(QStringLiteral("rank 1 is a straggler: compute 26.9 ms")));

    store.ingest(run(2, -1, 3, 4));
    QTRY_COMPARE(cleared.count(), 1);
    QCOMPARE(cleared.at(0).at(0).toInt(), 1);
    QVERIFY(!watch.isFlagged(1));
    QVERIFY(watch.summary().isEmpty());
    QCOMPARE(flagged.count(), 1);
  }

  void waitsForEveryRankOfAnInterval() {
    MetricsStore store;
    store.setWorld(3);
    StragglerWatch watch;
    watch.setStore(&store);
    // Rank 2 is far ahead of the others; rank 0 has not reported at all.
    for (int i = 1; i <= 4; ++i) {
      store.ingest(stepMessage(2, 5 * i, slowTimes(&wire::StepTimes::data, 20.0, kStragglerSteps)));
      store.ingest(stepMessage(1, 5 * i, normalTimes(kStragglerSteps)));
    }
    store.flush();
    QCOMPARE(watch.detector().intervals(), qint64(0));
    QVERIFY(!watch.isFlagged(2));
    for (int i = 1; i <= 3; ++i) store.ingest(stepMessage(0, 5 * i, normalTimes(kStragglerSteps)));
    store.flush();
    QCOMPARE(watch.detector().intervals(), qint64(3));
    QVERIFY(watch.isFlagged(2));
  }

  void noBreakdownNoStraggler() {
    MetricsStore store;
    store.setWorld(2);
    StragglerWatch watch;
    watch.setStore(&store);
    QSignalSpy changed(&watch, &StragglerWatch::changed);
    for (int i = 1; i <= 6; ++i) {
      store.ingest(stepMessage(0, 5 * i, std::nullopt));
      store.ingest(stepMessage(1, 5 * i, std::nullopt));
    }
    store.flush();
    QCOMPARE(store.rankSeries(1).size(), std::size_t(6));
    QCOMPARE(watch.detector().intervals(), qint64(0));
    QVERIFY(watch.flaggedRanks().empty());
    QCOMPARE(changed.count(), 0);
  }

  void clearingTheStoreForgetsTheFlag() {
    MetricsStore store;
    store.setWorld(2);
    StragglerWatch watch;
    watch.setStore(&store);
    store.ingest(run(2, 0, 3));
    store.flush();
    QVERIFY(watch.isFlagged(0));
    QSignalSpy changed(&watch, &StragglerWatch::changed);
    store.clear();
    QCOMPARE(changed.count(), 1);
    QVERIFY(!watch.isFlagged(0));
    // The next run starts from nothing: two slow intervals are not enough.
    store.setWorld(2);
    store.ingest(run(2, 0, 2));
    store.flush();
    QVERIFY(!watch.isFlagged(0));
  }

  void takesALongRunInSlices() {
    // 200,000 intervals from two ranks, rank 1 slow in the last three only.
    constexpr int kIntervals = 200000;
    MetricsStore store;
    store.setWorld(2);
    std::vector<wire::Message> messages;
    messages.reserve(2 * kIntervals);
    for (int i = 1; i <= kIntervals; ++i)
      for (int r = 0; r < 2; ++r)
        messages.push_back(stepMessage(
            r, i,
            r == 1 && i > kIntervals - 3 ? slowTimes(&wire::StepTimes::data, 20.0, kStragglerSteps)
                                         : normalTimes(kStragglerSteps)));
    store.ingest(messages);
    StragglerWatch watch;
    QSignalSpy flagged(&watch, &StragglerWatch::flagged);
    watch.setStore(&store);
    // Not in one go: the rest comes from the event loop ...
    QVERIFY(watch.detector().intervals() < kIntervals);
    // ... and every interval is taken, once.
    QTRY_COMPARE_WITH_TIMEOUT(watch.detector().intervals(), qint64(kIntervals), 120000);
    QCOMPARE(flagged.count(), 1);
    QCOMPARE(flagged.at(0).at(0).toInt(), 1);
    QCoreApplication::processEvents();
    QCOMPARE(watch.detector().intervals(), qint64(kIntervals));
  }

  void followsALoadedFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("metrics.jsonl"));
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      for (int r = 0; r < 4; ++r) {
        wire::Hello h;
        h.rank = r;
        h.world = 4;
        f.write(QByteArray::fromStdString(wire::encode(h)) + '\n');
      }
      for (const auto& m : run(4, 2, 4)) f.write(QByteArray::fromStdString(wire::encode(m)) + '\n');
    }
    MetricsStore store;
    StragglerWatch watch;
    watch.setStore(&store);
    QSignalSpy flagged(&watch, &StragglerWatch::flagged);
    QVERIFY(store.loadJsonl(path).ok);
    QCOMPARE(flagged.count(), 1);
    QCOMPARE(flagged.at(0).at(0).toInt(), 2);
    QCOMPARE(watch.flaggedRanks(), std::vector<int>{2});
    // A watch given a store that already holds the run catches up at once.
    StragglerWatch late;
    late.setStore(&store);
    QCOMPARE(late.flaggedRanks(), std::vector<int>{2});
    late.setStore(nullptr);
    QVERIFY(late.flaggedRanks().empty());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestStragglerWatch)
#include "test_straggler_watch.moc"

// The step breakdown as the store keeps it: from step messages with time_ms (live or from a
// metrics.jsonl), nothing from messages without it (older workers and files, which still load),
// and the figures derived from it (compute, wait, sync efficiency, the run's average).
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "breakdown_test_util.h"
#include "headless/breakdown_text.h"
#include "metrics/metrics_store.h"
#include "metrics/step_breakdown.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

class TestStepBreakdown : public QObject {
  Q_OBJECT

  static void writeLines(const QString& path, const QList<QByteArray>& lines) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    for (const auto& l : lines) f.write(l + '\n');
  }

 private Q_SLOTS:
  void derivedFigures() {
    const wire::StepTimes t = normalTimes();
    QCOMPARE(computeMs(t), 1.2 + 2.0 + 3.0 + 0.7);
    QCOMPARE(waitMs(t), 1.0);
    QVERIFY(qFuzzyCompare(syncEfficiency(t), 6.9 / 8.0));
    QCOMPARE(partMs(t, StepPart::Telemetry), 0.1);
    QCOMPARE(stepPartName(StepPart::Comm), QStringLiteral("comm"));
    QCOMPARE(stepPartName(StepPart::Other), QStringLiteral("other"));
    wire::StepTimes zero;
    QVERIFY(std::isnan(syncEfficiency(zero)));
  }

  void storeKeepsBreakdownsPerRank() {
    MetricsStore store;
    store.setWorld(2);
    store.ingest(stepMessage(0, 5, normalTimes()));
    store.ingest(stepMessage(1, 5, slowTimes(&wire::StepTimes::data, 20.0)));
    store.ingest(stepMessage(1, 10, normalTimes()));
    QCOMPARE(store.breakdown(0).size(), std::size_t(1));
    QCOMPARE(store.breakdown(1).size(), std::size_t(2));
    QCOMPARE(store.breakdown(1).step[0], 5.0);
    QCOMPARE(store.breakdown(1).step[1], 10.0);
    QCOMPARE(store.breakdown(1).at(0).data, 21.2);
    QCOMPARE(store.breakdown(1).latest()->data, 1.2);
    QCOMPARE(store.breakdown(1).latest()->steps, 5L);
    QCOMPARE(store.breakdown(0).latest()->comm, 1.0);
    QVERIFY(store.breakdown(7).empty());  // unknown rank: an empty series
    QVERIFY(!store.breakdown(-1).latest());
    store.clear();
    QVERIFY(store.breakdown(1).empty());
  }

  void averageWeighsTheStepsEachMessageCovers() {
    BreakdownSeries b;
    b.append(stepMessage(0, 1, slowTimes(&wire::StepTimes::data, 30.0)));  // covers 5 steps
    wire::StepTimes t = normalTimes(15);
    b.append(stepMessage(0, 2, t));
    const auto avg = b.average();
    QVERIFY(avg);
    // (5 x 31.2 + 15 x 1.2) / 20 = 8.7
    QVERIFY(qFuzzyCompare(avg->data, 8.7));
    QVERIFY(qFuzzyCompare(avg->forward, 2.0));
    QVERIFY(qFuzzyCompare(avg->step, (5 * 38.0 + 15 * 8.0) / 20));
    QCOMPARE(avg->steps, 20L);
    QVERIFY(!BreakdownSeries().average());
  }

  void messagesWithoutTimesAddNothing() {
    MetricsStore store;
    store.setWorld(2);
    store.ingest(stepMessage(0, 5, std::nullopt));
    store.ingest(stepMessage(1, 5, std::nullopt));
    QCOMPARE(store.rankSeries(0).size(), std::size_t(1));  // the step itself is kept
    QVERIFY(store.breakdown(0).empty());
    QVERIFY(!store.breakdown(1).latest());
    QVERIFY(formatBreakdownTable(store).isEmpty());
  }

  void loadsFilesWithAndWithoutTimes() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // A metrics.jsonl as older workers wrote it: no time_ms anywhere.
    const QString old = dir.filePath(QStringLiteral("old.jsonl"));
    writeLines(
        old,
        {R"({"type":"hello","v":1,"token":"","rank":0,"world":2,"pid":1,"host":"h","device":"cpu"})",
         R"({"type":"hello","v":1,"token":"","rank":1,"world":2,"pid":2,"host":"h","device":"cpu"})",
         R"({"type":"step","rank":0,"epoch":0,"step":5,"loss":0.5,"global_loss":0.5,"samples":640,"lr":0.001,"time":0.1,"samples_per_s":6400})",
         R"({"type":"step","rank":1,"epoch":0,"step":5,"loss":0.6,"global_loss":0.5,"samples":640,"lr":0.001,"time":0.1,"samples_per_s":6400})"});
    MetricsStore store;
    const auto r = store.loadJsonl(old);
    QVERIFY(r.ok);
    QCOMPARE(r.messages, qint64(4));
    QCOMPARE(r.malformed, qint64(0));
    QCOMPARE(store.rankSeries(1).size(), std::size_t(1));
    QVERIFY(store.breakdown(0).empty());
    QVERIFY(store.breakdown(1).empty());

    // The current format: the same, with time_ms.
    const QString now = dir.filePath(QStringLiteral("now.jsonl"));
    writeLines(now, {QByteArray::fromStdString(wire::encode(stepMessage(0, 5, normalTimes()))),
                     QByteArray::fromStdString(wire::encode(
                         stepMessage(1, 5, slowTimes(&wire::StepTimes::backward, 2.5))))});
    const auto r2 = store.loadJsonl(now);
    QVERIFY(r2.ok);
    QCOMPARE(r2.malformed, qint64(0));
    QCOMPARE(store.breakdown(0).size(), std::size_t(1));
    QCOMPARE(store.breakdown(1).latest()->backward, 5.5);
    QCOMPARE(store.breakdown(1).latest()->steps, 5L);

    // The table headless prints: a header, a line per rank.
    const QStringList table = formatBreakdownTable(store);
    QCOMPARE(table.size(), 3);
    QVERIFY(table[0].startsWith(QStringLiteral("rank  data ms")));
    QCOMPARE(table[1].simplified(), QStringLiteral("0 1.20 2.00 3.00 1.00 0.70 8.00 86%"));
    QCOMPARE(table[2].simplified(), QStringLiteral("1 1.20 2.00 5.50 1.00 0.70 10.50 90%"));
  }

  // A training script's breakdown (the Python client's ddpdesk.phase): "other" for its time
  // outside every phase, and no "comm" when it measured none. It survives the wire both ways;
  // other counts as compute; an unmeasured comm gives no wait and no sync efficiency (a DDP
  // script's allreduces hide in its backward: 100% would be false), in the average too.
  void scriptBreakdownWithOtherAndNoComm() {
    const QByteArray line =
        R"({"type":"step","rank":0,"epoch":0,"step":4,"loss":0.5,"global_loss":null,"samples":64,)"
        R"("lr":0.0,"time":1.0,"samples_per_s":0.0,"time_ms":{"data":1.0,"forward":2.0,)"
        R"("backward":3.0,"optimizer":0.5,"other":1.5,"step":8.0,"steps":2}})";
    MetricsStore store;
    store.setWorld(2);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("script.jsonl"));
    writeLines(path,
               {line, QByteArray::fromStdString(wire::encode(stepMessage(1, 4, normalTimes())))});
    const auto r = store.loadJsonl(path);
    QVERIFY(r.ok);
    QCOMPARE(r.malformed, qint64(0));
    const auto t = store.breakdown(0).latest();
    QVERIFY(t);
    QCOMPARE(t->other, 1.5);
    QVERIFY(!t->comm_measured);
    QCOMPARE(partMs(*t, StepPart::Other), 1.5);
    QCOMPARE(computeMs(*t), 1.0 + 2.0 + 3.0 + 0.5 + 1.5);
    QVERIFY(std::isnan(waitMs(*t)));
    QVERIFY(std::isnan(syncEfficiency(*t)));
    QVERIFY(!store.breakdown(0).average()->comm_measured);
    QCOMPARE(store.breakdown(0).average()->other, 1.5);
    QVERIFY(store.breakdown(1).latest()->comm_measured);  // the worker's, as before

    // Encoded again (the monitor's own records), it says the same.
    wire::Step s;
    s.times = *t;
    const std::string again = wire::encode(s);
    QVERIFY(again.find("\"other\":1.5") != std::string::npos);
    QVERIFY(again.find("\"comm\"") == std::string::npos);
    QVERIFY(wire::encode(stepMessage(1, 4, normalTimes())).find("\"other\"") == std::string::npos);

    // The table gets an "other" column, and n/a where comm was not measured.
    const QStringList table = formatBreakdownTable(store);
    QCOMPARE(table.size(), 3);
    QVERIFY(table[0].contains(QStringLiteral("other ms")));
    QCOMPARE(table[1].simplified(), QStringLiteral("0 1.00 2.00 3.00 n/a 0.50 1.50 8.00 n/a"));
    QCOMPARE(table[2].simplified(), QStringLiteral("1 1.20 2.00 3.00 1.00 0.70 0.00 8.00 86%"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestStepBreakdown)
#include "test_step_breakdown.moc"

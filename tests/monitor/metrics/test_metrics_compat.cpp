// metrics.jsonl across versions: a file written by the version before gauges, version ranges and
// unknown-input counting loads as it did (a real run's file, kept in data/); a file with what a
// newer version may add (a message type, a field) loads what this version knows and counts the
// rest, never as malformed.
#include <QTemporaryDir>
#include <QtTest>

#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "wire.h"

using namespace ddpdesk;

class TestMetricsCompat : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // data/metrics-v1.jsonl: `ddpdesk --headless --nproc 2 --task seed --dataset-size 64
  // --batch-size 4 --epochs 2` before this change (hellos without v_min/v_max).
  void aFileOfTheVersionBeforeLoads() {
    const QString path = QStringLiteral(DDPDESK_MONITOR_DATA "/metrics-v1.jsonl");
    QFile raw(path);
    QVERIFY(raw.open(QIODevice::ReadOnly));
    QVERIFY(!raw.readAll().contains("v_min"));  // really the old hello
    MetricsStore store;
    const auto r = store.loadJsonl(path);
    QVERIFY2(r.ok, qPrintable(r.error));
    QCOMPARE(r.messages, qint64(43));
    QCOMPARE(r.malformed, qint64(0));
    QCOMPARE(r.ignored, qint64(0));
    QCOMPARE(r.unknownFields, qint64(0));
    QCOMPARE(store.rankCount(), 2);
    QCOMPARE(int(store.rankSeries(0).size()), 16);
    QCOMPARE(int(store.rankSeries(1).size()), 16);
    QCOMPARE(int(store.global().size()), 16);
    QCOMPARE(store.global().step.back(), 16.0);
    QCOMPARE(int(store.evals().size()), 2);
    QCOMPARE(store.progress().totalSteps, qint64(16));
    QCOMPARE(store.rankInfo(1).device, QStringLiteral("cpu"));
    QVERIFY(store.gauges().empty());  // that version sent none
  }

  void newerLinesAreCountedNotMalformed() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("metrics.jsonl"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    auto write = [&](const std::string& line) { f.write(QByteArray::fromStdString(line + "\n")); };
    write(wire::encode(wire::Hello{wire::kVersion, "", 0, 1, 7, "h", "cpu"}));
    wire::Step s;
    s.step = 1;
    s.samples = 8;
    std::string withExtra = wire::encode(s);
    withExtra.insert(withExtra.size() - 1, R"(,"h2d_ms":0.25)");
    write(withExtra);
    write(R"({"type":"histogram","rank":0,"bins":[1,2,3]})");
    write(wire::encode(wire::Gauge{0, "cpu_percent", 93.5, "%", 1.0, 1}));
    write(wire::encode(wire::Gauge{0, "rss_bytes", 2.5e8, "B", 1.0, 1}));
    write("not json");
    f.close();

    MetricsStore store;
    const auto r = store.loadJsonl(path);
    QVERIFY(r.ok);
    QCOMPARE(r.messages, qint64(4));
    QCOMPARE(r.ignored, qint64(1));
    QCOMPARE(r.unknownFields, qint64(1));
    QCOMPARE(r.malformed, qint64(1));  // only the line that is not JSON
    QCOMPARE(int(store.rankSeries(0).size()), 1);
    QCOMPARE(store.gauges().latest(0, "cpu_percent"), 93.5);
    QCOMPARE(store.gauges().find(0, "rss_bytes")->samples[0], 8.0);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestMetricsCompat)
#include "test_metrics_compat.moc"

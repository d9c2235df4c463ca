// `ddpdesk --headless` and the system gauges: they land in the run's metrics.jsonl like every
// wire message, and the summary gives each rank's peak RSS and mean CPU % (the fake worker sends
// known values: cpu 20 + 10*rank + 10 on odd steps, rss (100 + 50*rank + step) MiB).
#include <QDir>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "monitor_test_util.h"
#include "qt_test_main.h"

using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = 120000;
}

class TestHeadlessSystem : public QObject {
  Q_OBJECT

  struct Result {
    int code = -1;
    QString out, err;
  };
  Result run(const QTemporaryDir& data, const QStringList& args, bool gauges) {
    QProcess p;
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert(QStringLiteral("XDG_DATA_HOME"), data.path());
    e.insert(QStringLiteral("DDPDESK_WORKER"), fakeWorker());
    e.insert(QStringLiteral("FAKE_STEPS"), QStringLiteral("20"));
    if (gauges) e.insert(QStringLiteral("FAKE_GAUGES"), QStringLiteral("1"));
    p.setProcessEnvironment(e);
    p.start(QStringLiteral(DDPDESK_BIN), QStringList{QStringLiteral("--headless")} + args);
    Result r;
    if (!p.waitForFinished(kTimeout) || p.exitStatus() != QProcess::NormalExit) return r;
    r.code = p.exitCode();
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
  }

 private Q_SLOTS:
  void summaryGivesPeakRssAndMeanCpuPerRank() {
    QTemporaryDir data;
    const Result r = run(data, {"--nproc", "2"}, true);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains(QLatin1String("system use per rank:")), qPrintable(r.out));
    QVERIFY2(r.out.contains(
                 QRegularExpression(QStringLiteral("rank\\s+peak RSS\\s+mean CPU %\\n0\\s+120 "
                                                   "MiB\\s+25\\.0\\n1\\s+170 MiB\\s+35\\.0\\n"))),
             qPrintable(r.out));
    QVERIFY(!r.out.contains(QLatin1String("GPU")));  // no rank sent GPU gauges

    // Every gauge is in metrics.jsonl, as received.
    const auto dir = QRegularExpression(QStringLiteral("run directory (\\S+)")).match(r.err);
    QVERIFY(dir.hasMatch());
    QFile metrics(dir.captured(1) + QStringLiteral("/metrics.jsonl"));
    QVERIFY(metrics.open(QIODevice::ReadOnly));
    int cpu = 0, rss = 0;
    for (const QByteArray& line : metrics.readAll().split('\n')) {
      if (!line.contains("\"type\":\"gauge\"")) continue;
      cpu += line.contains("\"name\":\"cpu_percent\"");
      rss += line.contains("\"name\":\"rss_bytes\"");
    }
    QCOMPARE(cpu, 2 * 20);
    QCOMPARE(rss, 2 * 20);
  }

  void noGaugesNoTable() {
    QTemporaryDir data;
    const Result r = run(data, {"--nproc", "2"}, false);
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains(QLatin1String("finished after")));
    QVERIFY2(!r.out.contains(QLatin1String("system use")), qPrintable(r.out));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestHeadlessSystem)
#include "test_headless_system.moc"

// CSV export: every point of the store, read back exactly, in the documented layout.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "charts/csv_export.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

void fill(MetricsStore& store) {
  store.ingest(wire::Hello{wire::kVersion, "", 0, 2, 100, "h", "cpu"});
  store.ingest(wire::Hello{wire::kVersion, "", 1, 2, 101, "h", "cpu"});
  for (int i = 1; i <= 250; ++i) {
    for (int r = 0; r < 2; ++r) {
      wire::Step s;
      s.rank = r;
      s.epoch = i / 100;
      s.step = i;
      s.loss = 1.0 / (3.0 + i) + 0.1 * r;  // not exactly representable in short decimals
      s.global_loss = 1.0 / (3.0 + i);
      s.samples = i * 16;
      s.time = i * 0.0137;
      s.samples_per_s = 1234.5678 + r;
      store.ingest(s);
    }
    if (i % 100 == 0) {
      wire::Eval e;
      e.rank = 0;
      e.epoch = i / 100 - 1;
      e.step = i;
      e.loss = 0.3 / i;
      e.accuracy = 0.5 + i / 1000.0;
      store.ingest(e);
    }
  }
}

double cell(const QList<QByteArray>& row, int i) {
  return row[i].isEmpty() ? std::numeric_limits<double>::quiet_NaN() : row[i].toDouble();
}

}  // namespace

class TestCsvExport : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void matchesTheStore() {
    MetricsStore store;
    fill(store);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("m.csv"));
    QString error;
    QVERIFY2(writeMetricsCsv(store, path, &error), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().split('\n');
    QCOMPARE(lines.first(), csvHeader());
    QCOMPARE(lines.last(), QByteArray());  // ends with a newline

    std::size_t seen[2] = {0, 0}, global = 0, evals = 0;
    for (int li = 1; li < lines.size() - 1; ++li) {
      const QList<QByteArray> row = lines[li].split(',');
      QCOMPARE(row.size(), 9);
      if (row[0] == "rank") {
        const int r = row[1].toInt();
        const StepSeries& s = store.rankSeries(r);
        const std::size_t i = seen[r]++;
        QCOMPARE(cell(row, 2), s.step[i]);
        QCOMPARE(cell(row, 3), s.epoch[i]);
        QCOMPARE(cell(row, 4), s.samples[i]);
        QCOMPARE(cell(row, 5), s.time[i]);
        QCOMPARE(cell(row, 6), s.loss[i]);  // exact: 17 significant digits
        QCOMPARE(cell(row, 7), s.samplesPerSec[i]);
        QVERIFY(row[8].isEmpty());
      } else if (row[0] == "global") {
        QVERIFY(row[1].isEmpty());
        const GlobalSeries& g = store.global();
        QCOMPARE(cell(row, 2), g.step[global]);
        QCOMPARE(cell(row, 6), g.loss[global]);
        QCOMPARE(cell(row, 4), g.samples[global]);
        ++global;
      } else {
        QCOMPARE(row[0], QByteArray("eval"));
        const EvalSeries& e = store.evals();
        QCOMPARE(cell(row, 2), e.step[evals]);
        QCOMPARE(cell(row, 6), e.loss[evals]);
        QCOMPARE(cell(row, 8), e.accuracy[evals]);
        QVERIFY(row[4].isEmpty() && row[5].isEmpty() && row[7].isEmpty());
        ++evals;
      }
    }
    QCOMPARE(seen[0], store.rankSeries(0).size());
    QCOMPARE(seen[1], store.rankSeries(1).size());
    QCOMPARE(global, store.global().size());
    QCOMPARE(evals, store.evals().size());
    QCOMPARE(evals, std::size_t(2));
  }

  void regressionEvalsLeaveAccuracyEmpty() {
    MetricsStore store;
    wire::Eval e;
    e.step = 5;
    e.loss = 0.25;
    store.ingest(e);
    QCOMPARE(metricsToCsv(store), csvHeader() + "\neval,,5,0,,,0.25,,\n");
  }

  void unwritablePathFails() {
    MetricsStore store;
    QString error;
    QVERIFY(!writeMetricsCsv(store, QStringLiteral("/nonexistent-dir/x.csv"), &error));
    QVERIFY(error.contains(QLatin1String("/nonexistent-dir/x.csv")));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestCsvExport)
#include "test_csv_export.moc"

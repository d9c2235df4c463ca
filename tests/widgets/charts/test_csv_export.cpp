// CSV export: every point of the store (steps, the run's curve, evaluations, gauges, the step
// breakdown), read back exactly, in the documented layout; names that need quoting quoted.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <map>

#include "charts/csv_export.h"
#include "metrics/metrics_store.h"
#include "metrics/step_breakdown.h"
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
      if (i % 50 == 0) {
        wire::StepTimes t;
        t.forward = 1.0 / i + r;
        t.backward = 2.0;
        t.other = r == 1 ? 0.5 : 0.0;
        t.comm_measured = r == 0;  // rank 1 as a script without a comm phase
        t.step = 3.0 + 1.0 / i + r;
        t.steps = 50;
        s.times = t;
      }
      store.ingest(s);
      if (i % 10 == 0) {
        wire::Gauge g;
        g.rank = r;
        g.name = "cpu_percent";
        g.unit = "%";
        g.value = 90.0 + 1.0 / i;
        g.step = i;
        g.time = s.time + 0.001;
        store.ingest(g);
      }
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

    std::size_t seen[2] = {0, 0}, global = 0, evals = 0, gauges[2] = {0, 0};
    std::map<std::pair<int, std::size_t>, std::map<QByteArray, double>> parts;  // rank, entry
    std::size_t breakdownRow[2] = {0, 0};
    double lastBreakdownStep[2] = {-1, -1};
    for (int li = 1; li < lines.size() - 1; ++li) {
      const QList<QByteArray> row = lines[li].split(',');
      QCOMPARE(row.size(), 12);
      if (row[0] != "gauge" && row[0] != "time_ms")
        QVERIFY(row[9].isEmpty() && row[10].isEmpty() && row[11].isEmpty());
      if (row[0] == "gauge") {
        const int r = row[1].toInt();
        const GaugeSeries* g = store.gauges().find(r, "cpu_percent");
        const std::size_t i = gauges[r]++;
        QCOMPARE(row[9], QByteArray("cpu_percent"));
        QCOMPARE(cell(row, 10), g->value[i]);
        QCOMPARE(row[11], QByteArray("%"));
        QCOMPARE(cell(row, 2), g->step[i]);
        QCOMPARE(cell(row, 4), g->samples[i]);
        QCOMPARE(cell(row, 5), g->time[i]);
      } else if (row[0] == "time_ms") {
        const int r = row[1].toInt();
        if (cell(row, 2) != lastBreakdownStep[r]) ++breakdownRow[r];
        lastBreakdownStep[r] = cell(row, 2);
        QCOMPARE(row[11], QByteArray("ms"));
        parts[{r, breakdownRow[r] - 1}][row[9]] = cell(row, 10);
      } else if (row[0] == "rank") {
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
    QCOMPARE(gauges[0], std::size_t(25));
    QCOMPARE(gauges[1], std::size_t(25));
    // The breakdown: a row per part and one for the step, each rank's entries in order; comm
    // only where it was measured.
    for (int r = 0; r < 2; ++r) {
      const BreakdownSeries& b = store.breakdown(r);
      QCOMPARE(breakdownRow[r], b.size());
      for (std::size_t i = 0; i < b.size(); ++i) {
        const auto& got = parts.at({r, i});
        const wire::StepTimes t = b.at(i);
        QCOMPARE(got.size(), std::size_t(r == 0 ? 8 : 7));
        QCOMPARE(got.count("comm"), std::size_t(r == 0 ? 1 : 0));
        QCOMPARE(got.at("forward"), t.forward);
        QCOMPARE(got.at("other"), t.other);
        QCOMPARE(got.at("step"), t.step);
      }
    }
  }

  void namesThatNeedQuotingAreQuoted() {
    MetricsStore store;
    store.ingest(wire::Hello{wire::kVersion, "", 0, 1, 100, "h", "cpu"});
    wire::Gauge g;
    g.name = "loss, \"smoothed\"";
    g.value = 0.5;
    store.ingest(g);
    QCOMPARE(metricsToCsv(store),
             csvHeader() + "\ngauge,0,0,,0,0,,,,\"loss, \"\"smoothed\"\"\",0.5,\n");
  }

  void regressionEvalsLeaveAccuracyEmpty() {
    MetricsStore store;
    wire::Eval e;
    e.step = 5;
    e.loss = 0.25;
    store.ingest(e);
    QCOMPARE(metricsToCsv(store), csvHeader() + "\neval,,5,0,,,0.25,,,,,\n");
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

// Gauges in the store: a series per rank and per name whatever the name, with the x columns the
// charts use (step, samples as of the rank's last step, time), peak and mean, and a cap on names.
#include <QSignalSpy>
#include <QtTest>
#include <cmath>

#include "metrics/gauge_series.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

wire::Gauge gauge(int rank, const std::string& name, double value, double time = 0,
                  std::int64_t step = 0) {
  return wire::Gauge{rank, name, value, name == "rss_bytes" ? "B" : "%", time, step};
}

wire::Step step(int rank, std::int64_t n, std::int64_t samples) {
  wire::Step s;
  s.rank = rank;
  s.step = n;
  s.samples = samples;
  s.time = double(n);
  return s;
}

}  // namespace

class TestGaugeSeries : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void keyedByRankAndName() {
    GaugeSet set;
    QVERIFY(set.empty());
    QVERIFY(set.add(gauge(1, "cpu_percent", 50, 1.0, 3), 24, 7));
    QVERIFY(set.add(gauge(1, "rss_bytes", 1e8, 1.0, 3), 24, 7));
    QVERIFY(set.add(gauge(0, "cpu_percent", 80, 1.5, 4), 32, 8));
    QVERIFY(set.add(gauge(1, "cpu_percent", 70, 2.0, 5), 40, 9));
    QCOMPARE(set.rankCount(), 2);
    QCOMPARE(set.names(), (std::vector<std::string>{"cpu_percent", "rss_bytes"}));

    const GaugeSeries* cpu1 = set.find(1, "cpu_percent");
    QVERIFY(cpu1);
    QCOMPARE(int(cpu1->size()), 2);
    QCOMPARE(cpu1->value[0], 50.0);
    QCOMPARE(cpu1->value[1], 70.0);
    QCOMPARE(cpu1->step[1], 5.0);
    QCOMPARE(cpu1->time[1], 2.0);
    QCOMPARE(cpu1->samples[1], 40.0);
    QCOMPARE(cpu1->unit, std::string("%"));
    QCOMPARE(cpu1->revision, quint64(9));
    QCOMPARE(set.latest(1, "cpu_percent"), 70.0);
    QCOMPARE(set.latest(0, "cpu_percent"), 80.0);
    QCOMPARE(set.find(0, "cpu_percent")->size(), std::size_t(1));  // ranks do not mix

    QVERIFY(!set.find(0, "rss_bytes"));  // never sent by rank 0
    QVERIFY(!set.find(5, "cpu_percent"));
    QVERIFY(!set.find(-1, "cpu_percent"));
    QVERIFY(std::isnan(set.latest(0, "rss_bytes")));
    QCOMPARE(set.ranksChangedSince(8), std::vector<int>{1});
    QCOMPARE(set.ranksChangedSince(6), (std::vector<int>{0, 1}));
  }

  void peakAndMeanSkipMissingValues() {
    GaugeSet set;
    for (double v : {10.0, std::nan(""), 30.0, 20.0}) set.add(gauge(0, "cpu_percent", v), 0, 1);
    const GaugeSeries* s = set.find(0, "cpu_percent");
    QCOMPARE(s->max(), 30.0);
    QCOMPARE(s->mean(), 20.0);
    QCOMPARE(int(s->size()), 4);  // the null value is kept as a point, NaN
    GaugeSeries empty;
    QVERIFY(std::isnan(empty.max()));
    QVERIFY(std::isnan(empty.mean()));
    QVERIFY(std::isnan(empty.latest()));
  }

  void namesPerRankAreCapped() {
    GaugeSet set;
    for (std::size_t i = 0; i < GaugeSet::kMaxNamesPerRank; ++i)
      QVERIFY(set.add(gauge(0, "g" + std::to_string(i), 1), 0, 1));
    QVERIFY(!set.add(gauge(0, "one-too-many", 1), 0, 1));
    QVERIFY(!set.find(0, "one-too-many"));
    QVERIFY(set.add(gauge(0, "g0", 2), 0, 1));            // known names go on
    QVERIFY(set.add(gauge(1, "one-too-many", 1), 0, 1));  // another rank has its own room
  }

  // Through the store: any name arrives without code of its own; the x on the samples axis is
  // what the rank had trained when the value came; the rank counts as seen.
  void theStoreKeepsAnyGauge() {
    MetricsStore store;
    QSignalSpy updated(&store, &MetricsStore::updated);
    store.ingest(gauge(0, "cpu_percent", 99, 0.5, 0));  // before the first step
    store.ingest(step(0, 1, 64));
    store.ingest(step(0, 2, 128));
    store.ingest(gauge(0, "cpu_percent", 97, 2.5, 2));
    store.ingest(wire::Gauge{1, "fan_rpm", 2400, "rpm", 1.0, 2});
    store.flush();
    QCOMPARE(updated.count(), 1);
    const GaugeSeries* cpu = store.gauges().find(0, "cpu_percent");
    QVERIFY(cpu);
    QCOMPARE(cpu->samples[0], 0.0);
    QCOMPARE(cpu->samples[1], 128.0);
    QCOMPARE(store.gauges().latest(1, "fan_rpm"), 2400.0);
    QVERIFY(store.rankInfo(1).seen);
    QCOMPARE(store.rankSeries(1).size(), std::size_t(0));  // gauges are not steps
    QCOMPARE(store.messageCount(), qint64(5));
    store.clear();
    QVERIFY(store.gauges().empty());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestGaugeSeries)
#include "test_gauge_series.moc"

// Chart curves share a metrics store's columns instead of copying them (curve_column.h), and
// keep their min/max pyramids as indices: the points drawn are the same as with copies (compared
// value by value against the store's columns), and what a curve holds of its own is bounded.
#include <QtTest>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <tuple>

#include <qcustomplot.h>

#include "charts/loss_chart.h"
#include "charts/throughput_chart.h"
#include "metrics/metrics_store.h"
#include "plot/curve_column.h"
#include "plot/curve_data.h"
#include "plot/smoothing.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

Column column(const std::vector<double>& values) {
  Column c;
  for (double v : values) c.push_back(v);
  return c;
}

std::vector<double> noisy(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(10.0 / (1.0 + 1e-3 * double(i)) + noise(gen));
  return v;
}

wire::Step step(int rank, int n, double time, int world) {
  wire::Step s;
  s.rank = rank;
  s.epoch = n / 100;
  s.step = n;
  s.loss = 1.0 / (1.0 + n) + 0.01 * rank + 0.001 * ((n * 7 + rank) % 13);
  s.global_loss = 1.0 / (1.0 + n);
  s.samples = std::int64_t(n) * 8 * world;
  s.time = time;
  s.samples_per_s = 1000.0 + 3 * n + rank;
  return s;
}

void hello(MetricsStore& store, int rank, int world) {
  store.ingest(wire::Hello{wire::kVersion, "", rank, world, 100 + rank, "h", "cpu"});
}

void run(MetricsStore& store, int from, int to, int world, double t0 = 0) {
  for (int n = from; n <= to; ++n)
    for (int r = 0; r < world; ++r) store.ingest(step(r, n, t0 + n * 0.1, world));
}

// Every point of `g` against the store: keys = x column (mapped by `key`), values = y * scale,
// smoothed = the debiased EMA of those values.
void checkCurve(const SmoothedGraph* g, const ColumnView& x, const ColumnView& y, double scale,
                double weight, const std::function<double(std::size_t)>& key = {}) {
  QVERIFY(g);
  QCOMPARE(std::size_t(g->size()), y.size());
  std::vector<double> expected;
  for (std::size_t i = 0; i < y.size(); ++i) {
    QCOMPARE(g->rawSeries().key(i), key ? key(i) : x[i]);
    QCOMPARE(g->rawSeries().value(i), y[i] * scale);
    expected.push_back(y[i] * scale);
  }
  if (weight <= 0) return;
  expected = debiasedEma(expected, weight);
  QCOMPARE(g->smoothedSeries().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    QCOMPARE(g->smoothedSeries().key(i), g->rawSeries().key(i));
    QCOMPARE(g->smoothedSeries().value(i), expected[i]);
  }
}

}  // namespace

class TestCurveSharing : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void columnSharesUntilItsSourceDiffers() {
    Column source = column({1, 2, 3, 4, 5, 6});
    CurveColumn c;
    c.append(CurveColumn::share(source, 0.5), 4);
    QVERIFY(c.shared());
    QCOMPARE(c.size(), std::size_t(4));
    QCOMPARE(c[3], 2.0);
    c.append(CurveColumn::share(source, 0.5), 1);  // the same column, grown: still shared
    QVERIFY(c.shared());
    QCOMPARE(c[4], 2.5);
    c.append(CurveColumn::share(source, 1.0),
             1);  // another scale: the first five stay as they were
    QVERIFY(!c.shared());
    QCOMPARE(c.size(), std::size_t(6));
    QCOMPARE(c[0], 0.5);
    QCOMPARE(c[4], 2.5);
    QCOMPARE(c[5], 6.0);

    // Entries given as values (a shifted key) end the sharing; another column's too.
    CurveColumn d;
    d.append(CurveColumn::share(source), 2);
    const double shifted[] = {100};
    d.append(CurveColumn::copy(shifted), 1);
    QVERIFY(!d.shared());
    QCOMPARE(d[1], 2.0);
    QCOMPARE(d[2], 100.0);
    CurveColumn e;
    Column other = column({9, 9, 9, 9});
    e.append(CurveColumn::share(source), 2);
    e.append(CurveColumn::share(other), 1);
    QVERIFY(!e.shared());
    QCOMPARE(e[1], 2.0);
    QCOMPARE(e[2], 9.0);
    // ... unless it is said to hold the same entries (a twin's keys that moved).
    Column copyOfSource = column({1, 2, 3, 4, 5, 6});
    CurveColumn f;
    f.append(CurveColumn::share(source), 2);
    f.append(CurveColumn::share(copyOfSource, 1.0, true), 2);
    QVERIFY(f.shared());
    QCOMPARE(f[3], 4.0);
  }

  // A series over shared, scaled columns draws exactly what one over copied values draws, at
  // every zoom (raw points and each envelope level), and its pyramid costs ~2/3 of a byte a point.
  void sharedSeriesDrawsWhatACopyDraws() {
    const std::size_t n = 300000;
    std::vector<double> keys(n), values = noisy(n, 5), scaled(n);
    for (std::size_t i = 0; i < n; ++i) keys[i] = double(i + 1);
    values[1234] = NAN;
    values[99999] = INFINITY;
    const double scale = 1.0 / 3;
    for (std::size_t i = 0; i < n; ++i) scaled[i] = values[i] * scale;
    const Column x = column(keys), y = column(values);
    LodSeries copied, shared;
    copied.append(keys.data(), scaled.data(), 1000);
    copied.append(keys.data() + 1000, scaled.data() + 1000, n - 1000);
    for (std::size_t to : {std::size_t(7), std::size_t(70000), n})
      shared.append(CurveColumn::share(x.prefix(to)), CurveColumn::share(y.prefix(to), scale),
                    to - shared.size());
    QVERIFY(shared.keys().shared() && shared.values().shared());
    QCOMPARE(shared.size(), n);
    QVERIFY(shared.pyramidBytes() <= n * 7 / 10);
    QVERIFY(shared.pyramidBytes() >= n / 2);  // every level-0 bucket is there
    for (const auto& [lo, hi, px] : {std::tuple{0.0, double(n), 1400}, std::tuple{0.0, 1e5, 200},
                                     std::tuple{5e4, 6e4, 1400}, std::tuple{1e3, 1.3e3, 50}}) {
      QVector<QCPGraphData> a, b;
      copied.points(lo, hi, px, &a);
      shared.points(lo, hi, px, &b);
      QCOMPARE(shared.lastLevel(), copied.lastLevel());
      QCOMPARE(b.size(), a.size());
      for (int i = 0; i < a.size(); ++i) {
        QCOMPARE(b[i].key, a[i].key);
        if (std::isnan(a[i].value))
          QVERIFY(std::isnan(b[i].value));
        else
          QCOMPARE(b[i].value, a[i].value);
      }
    }
  }

  // An opened run (rebuilt on a worker thread) and a live one (fed as it grows): every rank's
  // loss and samples/s curve shares the store's columns, holds the values a copy held, and keeps
  // about 9 bytes a point of its own (its smoothed values and two pyramids).
  void chartCurvesShareTheStoresColumns_data() {
    QTest::addColumn<bool>("onAWorker");
    QTest::newRow("rebuilt on a worker") << true;
    QTest::newRow("fed as it grows") << false;
  }
  void chartCurvesShareTheStoresColumns() {
    QFETCH(bool, onAWorker);
    const int world = 3, steps = 5000;
    MetricsStore store;
    for (int r = 0; r < world; ++r) hello(store, r, world);
    LossChart loss;
    ThroughputChart throughput;
    for (SeriesChart* c :
         {static_cast<SeriesChart*>(&loss), static_cast<SeriesChart*>(&throughput)})
      c->setAsyncThreshold(onAWorker ? 0 : std::numeric_limits<std::size_t>::max());
    if (onAWorker) run(store, 1, steps, world);
    loss.setSources({{"run", &store}});
    throughput.setSources({{"run", &store}});
    for (int chunk = 0; !onAWorker && chunk < 10; ++chunk) {
      run(store, chunk * steps / 10 + 1, (chunk + 1) * steps / 10, world);
      loss.sync();
      throughput.sync();
    }
    QTRY_VERIFY(!loss.isLoading() && !throughput.isLoading());
    for (int r = 0; r < world; ++r) {
      const StepSeries& s = store.rankSeries(r);
      const SmoothedGraph* l = loss.curve(LossChart::rankCurveName(r));
      const SmoothedGraph* t = throughput.curve(LossChart::rankCurveName(r));
      checkCurve(l, s.step, s.loss, 1.0, loss.smoothing());
      checkCurve(t, s.step, s.samplesPerSec, 1.0 / world, throughput.smoothing());
      for (const SmoothedGraph* g : {l, t}) {
        QVERIFY(g->rawSeries().keys().shared() && g->rawSeries().values().shared());
        QVERIFY(g->smoothedSeries().keys().shared());
        QVERIFY(g->data().ownBytes() <= std::size_t(steps) * 10);
      }
    }
    const GlobalSeries& gs = store.global();
    checkCurve(loss.curve(LossChart::globalCurveName()), gs.step, gs.loss, 1.0, loss.smoothing());
    QVERIFY(loss.curve(LossChart::globalCurveName())->rawSeries().values().shared());
  }

  // A resumed run on the wall-time axis: the second session's keys are shifted, so from there
  // the keys are the curve's own; the values stay shared and every point is where it was.
  void shiftedWallTimeKeysAreOwned() {
    MetricsStore store;
    run(store, 1, 1000, 2);
    run(store, 1001, 1500, 2, -100.0);  // resumed: its clock starts again at 0.1 s
    LossChart chart;
    chart.setXAxis(XAxis::WallTime);
    chart.setSources({{"run", &store}});
    chart.setAsyncThreshold(0);
    run(store, 1501, 2000, 2, -100.0);
    chart.sync();
    QTRY_VERIFY(!chart.isLoading());
    chart.sync();
    const SmoothedGraph* g = chart.curve(LossChart::rankCurveName(1));
    const Column& time = store.rankSeries(1).time;
    checkCurve(g, time, store.rankSeries(1).loss, 1.0, chart.smoothing(),
               [&](std::size_t i) { return i < 1000 ? time[i] : time[i] + time[999]; });
    QVERIFY(!g->rawSeries().keys().shared());
    QVERIFY(g->rawSeries().values().shared());
    QVERIFY(g->smoothedSeries().keys().shared());  // the raw series' own keys
  }

  // A rank appearing late changes every rank's share of the samples/s: its new curve rebuilds
  // the chart, and every point is drawn with the new share, still from the store's column.
  void aLateRankRedrawsEveryShare() {
    MetricsStore store;
    hello(store, 0, 1);
    ThroughputChart chart;
    chart.setSources({{"run", &store}});
    for (int n = 1; n <= 10; ++n) store.ingest(step(0, n, n * 0.1, 1));
    chart.sync();
    QCOMPARE(chart.curve(LossChart::rankCurveName(0))->rawSeries().value(9),
             store.rankSeries(0).samplesPerSec[9]);
    hello(store, 1, 2);
    for (int n = 11; n <= 20; ++n) store.ingest(step(0, n, n * 0.1, 2));
    chart.sync();
    const SmoothedGraph* g = chart.curve(LossChart::rankCurveName(0));
    const StepSeries& s = store.rankSeries(0);
    checkCurve(g, s.step, s.samplesPerSec, 0.5, chart.smoothing());
    QVERIFY(g->rawSeries().values().shared());
  }
};

DDPDESK_TEST_MAIN(TestCurveSharing)
#include "test_curve_sharing.moc"

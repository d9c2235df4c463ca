// The charts follow the store: curves receive every point, incrementally and only on sync; the
// legend toggles a series; x by step, samples or wall time; eval points; overlays; PNG export.
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <future>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <qcustomplot.h>

#include "charts/loss_chart.h"
#include "charts/throughput_chart.h"
#include "metrics/metrics_store.h"
#include "plot/series_chart_internal.h"
#include "plot/smoothing.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

wire::Step step(int rank, int n, double time, int world = 2) {
  wire::Step s;
  s.rank = rank;
  s.epoch = n / 100;
  s.step = n;
  s.loss = 1.0 / (1.0 + n) + 0.01 * rank;
  s.global_loss = 1.0 / (1.0 + n);
  s.samples = std::int64_t(n) * 8 * world;
  s.time = time;
  s.samples_per_s = 1000.0 + n;
  return s;
}

wire::Eval eval(int n, std::optional<double> acc = std::nullopt) {
  wire::Eval e;
  e.step = n;
  e.epoch = n / 100;
  e.loss = 0.5 / n;
  e.accuracy = acc;
  return e;
}

void run(MetricsStore& store, int from, int to, int world = 2, double t0 = 0) {
  for (int n = from; n <= to; ++n)
    for (int r = 0; r < world; ++r) store.ingest(step(r, n, t0 + n * 0.1, world));
}

std::vector<double> keys(const SmoothedGraph* g) {
  std::vector<double> out;
  for (std::size_t i = 0; i < g->rawSeries().size(); ++i) out.push_back(g->rawSeries().key(i));
  return out;
}
Column column(std::initializer_list<double> values) {
  Column c;
  for (double v : values) c.push_back(v);
  return c;
}

double value(const SmoothedGraph* g, int i) {
  return g->rawSeries().value(std::size_t(i));
}

}  // namespace

class TestCharts : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void curvesReceivePointsOnSyncOnly() {
    MetricsStore store;
    store.setWorld(2);
    LossChart chart;
    chart.setSources({{"run", &store}});
    QCOMPARE(chart.curveNames(), (QStringList{"rank 0", "rank 1", "global"}));
    run(store, 1, 50);
    // Nothing moves until the redraw timer (or a sync) runs: no per-point work.
    QCOMPARE(chart.curve("rank 0")->size(), 0);
    chart.sync();
    QCOMPARE(chart.curve("rank 0")->size(), 50);
    QCOMPARE(chart.curve("rank 1")->size(), 50);
    QCOMPARE(chart.curve("global")->size(), 50);
    QCOMPARE(value(chart.curve("rank 1"), 9), store.rankSeries(1).loss[9]);
    // Incremental: the next sync appends only the new points, in order.
    run(store, 51, 120);
    store.ingest(eval(100));
    chart.sync();
    QCOMPARE(chart.curve("rank 0")->size(), 120);
    QCOMPARE(chart.curveNames().last(), LossChart::evalCurveName());
    const SmoothedGraph* ev = chart.curve(LossChart::evalCurveName());
    QCOMPARE(ev->size(), 1);
    QCOMPARE(keys(ev).at(0), 100.0);
    QCOMPARE(value(ev, 0), 0.5 / 100);
    QCOMPARE(keys(chart.curve("global")).back(), 120.0);
  }

  void redrawsOnTheTimer() {
    MetricsStore store;
    LossChart chart;
    chart.setRedrawInterval(20);
    chart.setSources({{"run", &store}});
    run(store, 1, 10, 1);
    QTRY_COMPARE(chart.curve("global") ? chart.curve("global")->size() : 0, 10);
  }

  void newRanksGetCurves() {
    MetricsStore store;
    LossChart chart;
    chart.setSources({{"run", &store}});
    run(store, 1, 5, 1);
    chart.sync();
    QCOMPARE(chart.curveNames(), (QStringList{"rank 0", "global"}));
    store.ingest(step(3, 6, 0.6, 4));
    chart.sync();
    // In rank order, before the global curve (drawn on top), with every point fed again.
    QCOMPARE(chart.curveNames(), (QStringList{"rank 0", "rank 1", "rank 2", "rank 3", "global"}));
    QCOMPARE(chart.curve("rank 3")->size(), 1);
    QCOMPARE(chart.curve("rank 0")->size(), 5);
    QCOMPARE(chart.curve("global")->size(), 6);
  }

  // A rebuild on a worker thread (x axis switched while the run streams in): meanwhile the chart
  // says "Loading…"; afterwards every curve holds each point of its series exactly once, in
  // order, in the new x mode, including those that arrived during the rebuild.
  void asyncRebuildLosesAndDoublesNothing() {
    MetricsStore store;
    run(store, 1, 3000, 4);
    store.ingest(eval(1000));
    LossChart chart;
    chart.setAsyncThreshold(0);
    chart.resize(800, 400);
    chart.show();
    QSignalSpy loading(&chart, &SeriesChart::loadingChanged);
    chart.setSources({{"run", &store}});
    QVERIFY(chart.isLoading());
    QVERIFY(chart.findChild<QLabel*>("loading")->isVisible());
    QTRY_VERIFY(!chart.isLoading());
    QVERIFY(!chart.findChild<QLabel*>("loading")->isVisible());
    QCOMPARE(loading.count(), 2);
    QCOMPARE(chart.curve("rank 3")->size(), 3000);

    chart.setXAxis(XAxis::Samples);
    QVERIFY(chart.isLoading());
    int n = 3000;
    while (chart.isLoading() || n < 3100) {  // points keep coming during the rebuild, and after
      ++n;
      for (int r = 0; r < 4; ++r) store.ingest(step(r, n, n * 0.1, 4));
      if (n == 3050) store.ingest(eval(3050));
      chart.sync();  // what the redraw timer does
      QCoreApplication::processEvents();
    }
    chart.sync();
    for (int r = 0; r < 4; ++r) {
      const SmoothedGraph* g = chart.curve(QStringLiteral("rank %1").arg(r));
      QCOMPARE(g->size(), n);
      const std::vector<double> k = keys(g);
      for (int i = 0; i < n; ++i) {
        QCOMPARE(k[std::size_t(i)], double(i + 1) * 8 * 4);  // samples of step i + 1
        QCOMPARE(value(g, i), store.rankSeries(r).loss[std::size_t(i)]);
      }
      QCOMPARE(g->smoothedSeries().size(), std::size_t(n));
    }
    QCOMPARE(chart.curve("global")->size(), n);
    QCOMPARE(keys(chart.curve(LossChart::evalCurveName())),
             (std::vector<double>{1000.0 * 32, 3050.0 * 32}));
  }

  // With many points, a new smoothing weight is applied by a rebuild on the worker thread: the
  // smoothed curves then hold the debiased EMA with the new weight, of every point once.
  void smoothingChangeOfABigChartRebuildsOnAWorker() {
    MetricsStore store;
    run(store, 1, 2000);
    LossChart chart;
    chart.setSmoothing(0.6);
    chart.setSources({{"run", &store}});
    chart.setAsyncThreshold(0);
    chart.setSmoothing(0.9);
    QVERIFY(chart.isLoading());
    QTRY_VERIFY(!chart.isLoading());
    const SmoothedGraph* g = chart.curve("global");
    QCOMPARE(g->size(), 2000);
    std::vector<double> raw;
    for (int i = 0; i < 2000; ++i) raw.push_back(value(g, i));
    const std::vector<double> expected = debiasedEma(raw, 0.9);
    QCOMPARE(g->smoothedSeries().size(), std::size_t(2000));
    for (std::size_t i = 0; i < expected.size(); ++i)
      QCOMPARE(g->smoothedSeries().value(i), expected[i]);
  }

  // Switching a big chart to wall time rebuilds on the worker thread like the other axes (the
  // GUI thread never maps millions of keys), with a resumed session's restarted clock shifted
  // to follow the first one.
  void wallTimeSwitchOfABigChartRebuildsOnAWorker() {
    MetricsStore store;
    run(store, 1, 1000);
    run(store, 1001, 2000, 2, -100.0);  // resumed: its clock starts again at 0.1 s
    LossChart chart;
    chart.setSources({{"run", &store}});
    chart.setAsyncThreshold(0);
    chart.setXAxis(XAxis::WallTime);
    QVERIFY(chart.isLoading());
    QTRY_VERIFY(!chart.isLoading());
    for (const char* name : {"rank 0", "rank 1", "global"}) {
      const std::vector<double> k = keys(chart.curve(name));
      QCOMPARE(k.size(), std::size_t(2000));
      for (std::size_t i = 0; i < k.size(); ++i)
        QVERIFY2(std::abs(k[i] - double(i + 1) * 0.1) < 1e-9, name);
    }
  }

  // Rebuild threads run five nice levels lower so that the GUI thread gets its core when it wakes;
  // only they do: the GUI thread (this one) keeps its own priority.
  void rebuildThreadsYieldToTheGuiThread() {
    auto niceOfThisThread = [] {
      errno = 0;
      return getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
    };
    const int mine = niceOfThisThread();
    std::promise<int> niceThere;
    chart_detail::rebuildPool()->start([&] {
      chart_detail::asBackgroundWork();
      niceThere.set_value(niceOfThisThread());
    });
    const int theirs = niceThere.get_future().get();
    QCOMPARE(theirs, std::min(mine + 5, 19));
    QCOMPARE(niceOfThisThread(), mine);
  }

  // A store cleared while its curves are being rebuilt: the stale result is dropped.
  void clearDuringAsyncRebuild() {
    MetricsStore store;
    run(store, 1, 5000);
    LossChart chart;
    chart.setAsyncThreshold(0);
    chart.setSources({{"run", &store}});
    QVERIFY(chart.isLoading());
    store.clear();
    run(store, 1, 7);
    chart.sync();  // rebuilds again, from the new points
    QTRY_VERIFY(!chart.isLoading());
    QCOMPARE(chart.curve("rank 0")->size(), 7);
    QCOMPARE(chart.curve("global")->size(), 7);
  }

  void xAxisModes() {
    MetricsStore store;
    run(store, 1, 20);
    store.ingest(eval(10));
    LossChart chart;
    chart.setSources({{"run", &store}});
    chart.setXAxis(XAxis::Samples);
    QCOMPARE(keys(chart.curve("rank 0")).front(), 16.0);
    QCOMPARE(keys(chart.curve("global")).back(), 20.0 * 16);
    // An eval is placed at the samples of its step.
    QCOMPARE(keys(chart.curve(LossChart::evalCurveName())).at(0), 160.0);
    chart.setXAxis(XAxis::WallTime);
    QCOMPARE(keys(chart.curve("rank 1")).back(), 2.0);
    QCOMPARE(keys(chart.curve(LossChart::evalCurveName())).at(0), 1.0);
    QCOMPARE(chart.plot()->xAxis->label(), xAxisLabel(XAxis::WallTime));
  }

  // A chart with an evaluation curve maps every global step to its x key (where an evaluation
  // point goes), on a sync and in a worker's rebuild; the system chart maps none
  // (test_system_chart's mapsNoGlobalKeysOnAnyXAxis).
  void evalKeysAreMappedOnEveryXAxis() {
    MetricsStore store;
    run(store, 1, 20);
    store.ingest(eval(10));
    LossChart chart;
    chart.setSources({{"run", &store}});
    chart.setXAxis(XAxis::Samples);
    QCOMPARE(chart.mappedGlobalKeys(0), std::size_t(20));
    run(store, 21, 30);
    chart.sync();
    QCOMPARE(chart.mappedGlobalKeys(0), std::size_t(30));
    chart.setAsyncThreshold(0);
    chart.setXAxis(XAxis::WallTime);
    QTRY_VERIFY(!chart.isLoading());
    QCOMPARE(chart.mappedGlobalKeys(0), std::size_t(30));
  }

  void wallTimeOfAResumedRunStaysInOrder() {
    // The resumed session's clock restarts at 0; its points follow the first session's.
    KeyMapper m(XAxis::WallTime);
    QCOMPARE(m.map(1.0), 1.0);
    QCOMPARE(m.map(5.0), 5.0);
    QCOMPARE(m.map(0.5), 5.5);
    QCOMPARE(m.map(2.0), 7.0);
    KeyMapper steps(XAxis::Step);
    QCOMPARE(steps.map(3.0), 3.0);
    QCOMPARE(steps.map(1.0), 1.0);
    QCOMPARE(keyForStep(column({1, 2, 3, 5}), {10, 20, 30, 50}, 4), 30.0);
    QCOMPARE(keyForStep(column({1, 2, 3, 5}), {10, 20, 30, 50}, 5), 50.0);
    QCOMPARE(keyForStep(column({1, 2}), {10, 20}, 0), 10.0);
    QVERIFY(std::isnan(keyForStep(Column(), {}, 1)));
  }

  void legendClickTogglesASeries() {
    MetricsStore store;
    run(store, 1, 30);
    LossChart chart;
    chart.resize(800, 500);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.setSources({{"run", &store}});
    chart.plot()->replot();
    QCustomPlot* plot = chart.plot();
    QCPAbstractLegendItem* item =
        plot->legend->itemWithPlottable(chart.curve("rank 1")->legendPlottable());
    QVERIFY(item);
    const QPoint at = item->outerRect().center();
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    QVERIFY(!chart.isCurveVisible("rank 1"));
    QVERIFY(!chart.curve("rank 1")->raw()->visible());
    QVERIFY(!chart.curve("rank 1")->smoothed()->visible());
    QVERIFY(chart.isCurveVisible("rank 0"));
    // Not a double-click: QTest puts its double-click interval between one click's release and
    // the next press's timestamp, however soon it comes.
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    QVERIFY(chart.isCurveVisible("rank 1"));
  }

  void hiddenSeriesLeaveTheAutoRange() {
    MetricsStore store;
    run(store, 1, 30);
    LossChart chart;
    chart.setSmoothing(0);
    chart.setSources({{"run", &store}});
    const double withAll = chart.plot()->yAxis->range().upper;
    chart.setCurveVisible("rank 1", false);  // rank 1's loss is the highest
    QVERIFY(chart.plot()->yAxis->range().upper < withAll);
  }

  void smoothingOffDrawsTheRawCurveInFullColour() {
    MetricsStore store;
    run(store, 1, 10);
    LossChart chart;
    chart.setSources({{"run", &store}});
    // Faint behind: much lighter than the smoothed curve's colour.
    QVERIFY(chart.curve("global")->raw()->pen().color().lightness() >
            chart.curve("global")->smoothed()->pen().color().lightness() + 100);
    QCOMPARE(chart.curve("global")->smoothedSeries().size(), std::size_t(10));
    chart.plot()->replot();
    QCOMPARE(chart.curve("global")->smoothed()->data()->size(), 10);
    chart.setSmoothing(0);
    QCOMPARE(chart.curve("global")->raw()->pen().color(),
             chart.curve("global")->smoothed()->pen().color());
    QCOMPARE(chart.curve("global")->smoothedSeries().size(), std::size_t(0));
    chart.plot()->replot();
    QCOMPARE(chart.curve("global")->smoothed()->data()->size(), 0);
  }

  void logScaleAndFollowing() {
    MetricsStore store;
    run(store, 1, 100);
    LossChart chart;
    chart.setSources({{"run", &store}});
    chart.setLogY(true);
    QCOMPARE(chart.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(chart.plot()->yAxis->range().lower > 0);
    QVERIFY(chart.plot()->yAxis->range().lower < 1.0 / 101);
    // Zoomed in by hand: new data no longer moves the view, until Reset.
    chart.resize(600, 400);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QWheelEvent wheel(QPointF(300, 200), chart.plot()->mapToGlobal(QPointF(300, 200)), {}, {0, 120},
                      Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(chart.plot(), &wheel);
    QVERIFY(!chart.following());
    const QCPRange before = chart.plot()->xAxis->range();
    run(store, 101, 200);
    chart.sync();
    QCOMPARE(chart.plot()->xAxis->range(), before);
    chart.resetView();
    QVERIFY(chart.following());
    QCOMPARE(chart.plot()->xAxis->range().upper, 200.0);
  }

  void throughputAndAccuracy() {
    MetricsStore store;
    store.setWorld(2);
    run(store, 1, 20);
    ThroughputChart chart;
    chart.setSources({{"run", &store}});
    QVERIFY(!chart.curveNames().contains(ThroughputChart::accuracyCurveName()));
    // Each rank's share of the global rate it measured.
    QCOMPARE(value(chart.curve("rank 0"), 0), 1001.0 / 2);
    QCOMPARE(value(chart.curve("global"), 0), 1001.0);
    store.ingest(eval(10, 0.75));
    chart.sync();
    const SmoothedGraph* acc = chart.curve(ThroughputChart::accuracyCurveName());
    QVERIFY(acc);
    QCOMPARE(acc->raw()->valueAxis(), chart.plot()->yAxis2);
    QCOMPARE(value(acc, 0), 0.75);
    QVERIFY(chart.plot()->yAxis2->visible());
    // Then a run without evaluations (a new live run): no empty accuracy axis left over.
    MetricsStore next;
    next.setWorld(1);
    run(next, 1, 5);
    chart.setSources({{"next", &next}});
    chart.sync();
    QVERIFY(!chart.curveNames().contains(ThroughputChart::accuracyCurveName()));
    QVERIFY(!chart.plot()->yAxis2->visible());
  }

  // A constant small value (a learning rate of 0.002 on a scalar's chart) gets an axis of its
  // own order around it, not one from -0.5 to 0.5 where it reads as zero.
  void aConstantSmallValueHasAnAxisAroundIt() {
    MetricsStore store;
    store.setWorld(1);
    for (int n = 1; n <= 5; ++n) {
      wire::Step s = step(0, n, n * 0.1, 1);
      s.samples_per_s = 0.002;
      store.ingest(s);
    }
    store.flush();
    ThroughputChart chart;
    chart.setSources({{"run", &store}});
    chart.sync();
    const QCPRange r = chart.plot()->yAxis->range();
    QVERIFY2(r.lower < 0.002 && r.upper > 0.002 && r.size() < 0.001,
             qPrintable(QStringLiteral("%1 .. %2").arg(r.lower).arg(r.upper)));
  }

  // A run whose ranks count no samples (a script charted from its printed losses): no flat zero
  // curve that reads as a stalled run, but a note; it goes once a run with counts is shown.
  void throughputOfARunWithoutSampleCounts() {
    MetricsStore store;
    store.setWorld(2);
    for (int n = 1; n <= 5; ++n)
      for (int r = 0; r < 2; ++r) {
        wire::Step s = step(r, n, n * 0.1);
        s.samples = 0;
        s.samples_per_s = 0;
        store.ingest(s);
      }
    store.flush();
    ThroughputChart chart;
    chart.setSources({{"script", &store}});
    chart.sync();
    QVERIFY(chart.curveNames().isEmpty());
    QVERIFY(chart.showsNote());
    QVERIFY2(chart.noteText().contains(QStringLiteral("no sample counts")),
             qPrintable(chart.noteText()));
    MetricsStore counted;
    run(counted, 1, 5);
    chart.setSources({{"run", &counted}});
    chart.sync();
    QVERIFY(!chart.showsNote());
    QVERIFY(chart.curve("global"));
  }

  void overlayShowsEachRunsGlobalLoss() {
    MetricsStore a, b;
    run(a, 1, 30);
    run(b, 1, 60);
    b.ingest(eval(60));
    LossChart chart;
    chart.setSources({{"run-a", &a}, {"run-b", &b}});
    QCOMPARE(chart.curveNames(), (QStringList{"run-a", "run-b", "run-b (val.)"}));
    QCOMPARE(chart.curve("run-a")->size(), 30);
    QCOMPARE(chart.curve("run-b")->size(), 60);
    QVERIFY(chart.curve("run-a")->smoothed()->pen().color() !=
            chart.curve("run-b")->smoothed()->pen().color());
  }

  void clearedStoreRedraws() {
    MetricsStore store;
    run(store, 1, 40);
    LossChart chart;
    chart.setSources({{"run", &store}});
    QCOMPARE(chart.curve("global")->size(), 40);
    store.clear();  // a new run in the same controller
    run(store, 1, 5);
    chart.sync();
    QCOMPARE(chart.curve("global")->size(), 5);
  }

  void exportsPng() {
    MetricsStore store;
    run(store, 1, 40);
    LossChart chart;
    chart.resize(640, 400);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.setSources({{"run", &store}});
    QTemporaryDir dir;
    const QString path = dir.filePath("c.png");
    QVERIFY(chart.savePng(path));
    QImage img(path);
    QVERIFY(!img.isNull());
    QCOMPARE(img.width(), chart.plot()->width());
    QVERIFY(chart.savePng(path, 1200, 700));
    QCOMPARE(QImage(path).size(), QSize(1200, 700));
  }
};

DDPDESK_TEST_MAIN(TestCharts)
#include "test_charts.moc"

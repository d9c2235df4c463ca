// The Scalars area: a chart for every gauge a training script logs that is not a system gauge,
// one curve per rank with exactly the points the store holds, charts added as names arrive
// during a live run (on the panel's sync, never per message), the panel's x axis and smoothing,
// runs overlaid, odd names shown as plain text, and many names in a grid that scrolls, where the
// charts out of sight are paused and catch up when scrolled back.
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QtTest>

#include <qcustomplot.h>

#include "charts/charts_panel.h"
#include "charts/scalar_chart.h"
#include "charts/scalars_panel.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "system_gauges.h"

using namespace ddpdesk;

namespace {

// Rank r's step n (n = 1, 2, ...): samples 16 n, time 0.5 n + r (the ranks' clocks differ).
void step(MetricsStore& store, int rank, int n) {
  wire::Step s;
  s.rank = rank;
  s.step = n;
  s.samples = 16 * n;
  s.time = 0.5 * n + rank;
  store.ingest(s);
}

void gauge(MetricsStore& store, int rank, int n, const std::string& name, double value) {
  store.ingest(wire::Gauge{rank, name, value, "", 0.5 * n + rank, n});
}

// Steps 1..3 of ranks 0 and 1, each with lr = (n + r) / 1000, grad_norm = 10 r + n and a system
// gauge (cpu_percent = 90 + r): every value tells its rank, name and step apart.
void feed(MetricsStore& store, int from = 1, int to = 3) {
  for (int n = from; n <= to; ++n)
    for (int r = 0; r < 2; ++r) {
      step(store, r, n);
      gauge(store, r, n, "lr", (n + r) / 1000.0);
      gauge(store, r, n, "grad_norm", 10.0 * r + n);
      gauge(store, r, n, gauges::kCpuPercent, 90.0 + r);
    }
}

std::vector<double> keys(const SmoothedGraph* g) {
  std::vector<double> out;
  for (std::size_t i = 0; i < g->rawSeries().size(); ++i) out.push_back(g->rawSeries().key(i));
  return out;
}

std::vector<double> values(const SmoothedGraph* g) {
  std::vector<double> out;
  for (std::size_t i = 0; i < g->rawSeries().size(); ++i) out.push_back(g->rawSeries().value(i));
  return out;
}

std::vector<std::string> chartNames(const ScalarsPanel& p) {
  std::vector<std::string> out;
  for (const ScalarChart* c : p.charts()) out.push_back(c->gauge());
  return out;
}

}  // namespace

class TestScalarsPanel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void aChartPerScalarNotPerSystemGauge() {
    MetricsStore store;
    ChartsPanel panel;
    panel.setSources({{"run", &store}}, true);
    ScalarsPanel* scalars = panel.scalarsPanel();
    QCOMPARE(scalars->chartCount(), 0);
    QVERIFY(scalars->isHidden());  // no scalars, no area
    feed(store);
    scalars->sync();
    QCOMPARE(chartNames(*scalars), (std::vector<std::string>{"lr", "grad_norm"}));
    QVERIFY(!scalars->chart(gauges::kCpuPercent));
    QVERIFY(!scalars->isHidden());

    ScalarChart* lr = scalars->chart("lr");
    ScalarChart* norm = scalars->chart("grad_norm");
    QCOMPARE(lr->title(), QStringLiteral("lr"));
    lr->sync();
    norm->sync();
    QCOMPARE(lr->curveNames(), (QStringList{"rank 0", "rank 1"}));
    QCOMPARE(norm->curveNames(), (QStringList{"rank 0", "rank 1"}));
    QCOMPARE(values(lr->curve("rank 0")), (std::vector<double>{0.001, 0.002, 0.003}));
    QCOMPARE(values(lr->curve("rank 1")), (std::vector<double>{0.002, 0.003, 0.004}));
    QCOMPARE(values(norm->curve("rank 0")), (std::vector<double>{1, 2, 3}));
    QCOMPARE(values(norm->curve("rank 1")), (std::vector<double>{11, 12, 13}));
    QCOMPARE(keys(norm->curve("rank 1")), (std::vector<double>{1, 2, 3}));  // steps
    // The rank's colour, as on the loss and throughput charts.
    for (int r = 0; r < 2; ++r)
      QCOMPARE(norm->curve(ScalarChart::curveName(r))->legendPlottable()->pen().color(),
               SeriesChart::paletteColor(r));

    feed(store, 4, 4);  // incremental: the new point once, nothing twice
    lr->sync();
    QCOMPARE(values(lr->curve("rank 1")), (std::vector<double>{0.002, 0.003, 0.004, 0.005}));
  }

  // During a live run a name can first come at any step: its chart appears on the panel's next
  // sync (the timer's), after the charts already there, which are kept as they are.
  void aNameArrivingLaterAddsItsChart() {
    MetricsStore store;
    ChartsPanel panel;
    panel.setSources({{"run", &store}}, true);
    ScalarsPanel* scalars = panel.scalarsPanel();
    for (int n = 1; n <= 2; ++n) {
      step(store, 0, n);
      gauge(store, 0, n, "lr", 0.1);
    }
    scalars->sync();
    QCOMPARE(chartNames(*scalars), std::vector<std::string>{"lr"});
    ScalarChart* lr = scalars->chart("lr");

    step(store, 1, 3);
    gauge(store, 1, 3, "tokens_per_s", 5000);
    QCOMPARE(scalars->chartCount(), 1);  // not per message: on the next sync
    scalars->sync();
    QCOMPARE(chartNames(*scalars), (std::vector<std::string>{"lr", "tokens_per_s"}));
    QCOMPARE(scalars->chart("lr"), lr);  // the same chart (its zoom, its hidden curves)
    ScalarChart* tokens = scalars->chart("tokens_per_s");
    tokens->sync();
    QCOMPARE(tokens->curveNames(), QStringList{"rank 1"});
    QCOMPARE(values(tokens->curve("rank 1")), std::vector<double>{5000});
  }

  // Runs without scalars (the built-in tasks) leave the area hidden; a run opened from the
  // history with scalars shows it, and going back hides it again (keeping its height).
  void theAreaShowsOnlyWhileThereAreScalars() {
    MetricsStore plain, script;
    step(plain, 0, 1);
    gauge(plain, 0, 1, gauges::kRssBytes, 1e8);
    feed(script);
    ChartsPanel panel;
    panel.resize(1000, 800);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setSources({{"plain", &plain}}, true);
    QVERIFY(panel.scalarsPanel()->isHidden());
    panel.setSources({{"script", &script}}, false);
    QCOMPARE(panel.scalarsPanel()->chartCount(), 2);
    QVERIFY(panel.scalarsPanel()->isVisible());
    QVERIFY(panel.scalarsPanel()->height() >= 150);  // room for a row of charts
    // A height the user gave it is kept while it is away.
    auto* split = qobject_cast<QSplitter*>(panel.scalarsPanel()->parentWidget());
    QVERIFY(split);
    QList<int> sizes = split->sizes();
    const int total = sizes[0] + sizes[1] + sizes[2];
    split->setSizes({total - 500, 200, 300});
    QCOMPARE(split->sizes()[2], 300);
    panel.setSources({{"plain", &plain}}, true);
    QCOMPARE(panel.scalarsPanel()->chartCount(), 0);
    QVERIFY(panel.scalarsPanel()->isHidden());
    panel.setSources({{"script", &script}}, false);
    QCOMPARE(split->sizes()[2], 300);
  }

  void followsThePanelsXAxisAndSmoothing() {
    MetricsStore store;
    ChartsPanel panel;
    panel.setSources({{"run", &store}}, true);
    panel.setXAxis(XAxis::WallTime);
    panel.setSmoothing(0.3);
    feed(store);
    panel.scalarsPanel()->sync();  // created after the switch: takes the axis and weight
    ScalarChart* norm = panel.scalarsPanel()->chart("grad_norm");
    norm->sync();
    QCOMPARE(norm->xAxis(), XAxis::WallTime);
    QCOMPARE(keys(norm->curve("rank 1")), (std::vector<double>{1.5, 2, 2.5}));
    QCOMPARE(norm->smoothing(), 0.3);
    panel.setXAxis(XAxis::Samples);
    norm->sync();  // paused (not on screen): it catches up when synced
    QCOMPARE(keys(norm->curve("rank 1")), (std::vector<double>{16, 32, 48}));
    panel.setSmoothing(0.8);
    QCOMPARE(norm->smoothing(), 0.8);
  }

  // Runs opened together from the history: a chart for every name any of them has, a curve per
  // run and rank in the run's colour; an imported TensorBoard series is not a run.
  void overlaidRuns() {
    MetricsStore a, b, imported;
    for (int r = 0; r < 2; ++r) {
      step(a, r, 1);
      gauge(a, r, 1, "lr", 0.5);
    }
    step(b, 0, 1);
    gauge(b, 0, 1, "grad_norm", 2);
    gauge(b, 0, 1, "lr", 0.25);
    gauge(imported, 0, 1, "ignored", 1);
    ChartsPanel panel;
    panel.setSources({{"a", &a}, {"b", &b}, {"tb", &imported, true}}, false);
    ScalarsPanel* scalars = panel.scalarsPanel();
    QCOMPARE(chartNames(*scalars), (std::vector<std::string>{"lr", "grad_norm"}));
    ScalarChart* lr = scalars->chart("lr");
    lr->sync();
    QCOMPARE(lr->curveNames(), (QStringList{"a rank 0", "a rank 1", "b rank 0"}));
    QCOMPARE(values(lr->curve("b rank 0")), std::vector<double>{0.25});
    QCOMPARE(lr->curve("a rank 1")->legendPlottable()->pen().color(), SeriesChart::paletteColor(0));
    QCOMPARE(lr->curve("b rank 0")->legendPlottable()->pen().color(), SeriesChart::paletteColor(1));
  }

  // A name is the script's: markup stays text, a line break or a direction override cannot
  // reach the title, and 128 characters do not hold the chart wider than its column.
  void oddNamesAreShownAsText() {
    const std::string odd = "<b>loss</b>&amp;\nnext\xe2\x80\xaeline";  // U+202E: RTL override
    QCOMPARE(ScalarChart::displayName(odd), QStringLiteral("<b>loss</b>&amp;\uFFFDnext\uFFFDline"));
    const std::string longName(128, 'x');
    MetricsStore store;
    step(store, 0, 1);
    gauge(store, 0, 1, odd, 1);
    gauge(store, 0, 1, longName, 2);
    ChartsPanel panel;
    panel.setSources({{"run", &store}}, true);
    ScalarsPanel* scalars = panel.scalarsPanel();
    QCOMPARE(scalars->chartCount(), 2);
    QCOMPARE(scalars->chart(odd)->title(), ScalarChart::displayName(odd));
    QVERIFY(scalars->chart(longName)->minimumSizeHint().width() < 320);
  }

  // Thirty names: a grid of several columns that scrolls; the charts out of sight are paused
  // and catch up (every point) when scrolled into view; the wheel over a chart scrolls the grid.
  void manyNamesScrollAndPauseOutOfSight() {
    MetricsStore store;
    for (int n = 1; n <= 2; ++n) {
      step(store, 0, n);
      for (int k = 0; k < 30; ++k) gauge(store, 0, n, "scalar_" + std::to_string(k), k + n);
    }
    ChartsPanel panel;
    panel.resize(1400, 900);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setSources({{"run", &store}}, true);
    ScalarsPanel* scalars = panel.scalarsPanel();
    QCOMPARE(scalars->chartCount(), 30);
    QCoreApplication::processEvents();  // the grid's layout at the area's size
    scalars->sync();
    QVERIFY(scalars->columnCount() >= 2);
    QScrollBar* bar = scalars->findChild<QScrollArea*>("scalarsScroll")->verticalScrollBar();
    QVERIFY(bar->maximum() > 0);
    ScalarChart* first = scalars->charts().front();
    ScalarChart* last = scalars->charts().back();
    QVERIFY(!first->isPaused());
    QVERIFY(last->isPaused());
    QVERIFY(last->curveNames().isEmpty());  // nothing built while out of sight

    // The wheel over a chart scrolls the grid and leaves the chart's x range alone.
    const QCPRange range = first->plot()->xAxis->range();
    QWheelEvent wheel(QPointF(50, 50), first->plot()->mapToGlobal(QPointF(50, 50)), QPoint(),
                      QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(first->plot(), &wheel);
    QVERIFY(bar->value() > 0);
    QCOMPARE(first->plot()->xAxis->range(), range);

    bar->setValue(bar->maximum());
    QVERIFY(!last->isPaused());
    QVERIFY(first->isPaused());
    QCOMPARE(values(last->curve("rank 0")), (std::vector<double>{30, 31}));
  }
};

DDPDESK_TEST_MAIN(TestScalarsPanel)
#include "test_scalars_panel.moc"

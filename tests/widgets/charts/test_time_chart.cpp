// The Time chart (offscreen): one stacked bar per rank from its breakdown, latest interval or run
// average, the step time and sync efficiency at the bar's end, a straggler named there, a note
// instead of bars for a run without breakdowns, and a redraw only when the store changed.
#include <qcustomplot.h>
#include <QtTest>

#include "breakdown_test_util.h"
#include "charts/time_chart.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {

// The value of `part`'s bar for `rank` (NaN: no bar).
double barValue(const TimeChart& chart, StepPart part, int rank) {
  const auto data = chart.bars(part)->data();
  for (auto it = data->constBegin(); it != data->constEnd(); ++it)
    if (it->key == rank) return it->value;
  return qQNaN();
}

QStringList legendNames(const TimeChart& chart) {
  QStringList names;
  for (int i = 0; i < chart.plot()->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(chart.plot()->legend->item(i)))
      names << item->plottable()->name();
  return names;
}

}  // namespace

class TestTimeChart : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void barsFollowTheLatestBreakdown() {
    MetricsStore store;
    store.setWorld(2);
    TimeChart chart;
    chart.resize(500, 300);
    chart.setSources({{QStringLiteral("run"), &store}});
    chart.sync();
    QVERIFY(chart.shownRanks().empty());
    QCOMPARE(chart.note(), QStringLiteral("No steps yet"));

    store.ingest(stepMessage(0, 5, normalTimes()));
    store.ingest(stepMessage(1, 5, slowTimes(&wire::StepTimes::data, 20.0)));
    chart.sync();
    QCOMPARE(chart.shownRanks(), (std::vector<int>{0, 1}));
    QVERIFY(chart.note().isEmpty());
    QCOMPARE(barValue(chart, StepPart::Data, 0), 1.2);
    QCOMPARE(barValue(chart, StepPart::Data, 1), 21.2);
    QCOMPARE(barValue(chart, StepPart::Forward, 1), 2.0);
    QCOMPARE(barValue(chart, StepPart::Backward, 0), 3.0);
    QCOMPARE(barValue(chart, StepPart::Comm, 0), 1.0);
    QCOMPARE(barValue(chart, StepPart::Optimizer, 1), 0.7);
    QCOMPARE(barValue(chart, StepPart::Telemetry, 0), 0.1);
    // Stacked: each part starts where the one before it ends.
    QCOMPARE(chart.bars(StepPart::Forward)->barBelow(), chart.bars(StepPart::Data));
    QCOMPARE(chart.bars(StepPart::Other)->barBelow(), chart.bars(StepPart::Optimizer));
    QCOMPARE(barValue(chart, StepPart::Other, 0), 0.0);  // a worker has no "other"
    // The bar's end: step time and sync efficiency (6.9 of 8.0 ms, 26.9 of 28.0 ms).
    QCOMPARE(chart.barLabel(0), QStringLiteral("8.0 ms · 86% sync"));
    QCOMPARE(chart.barLabel(1), QStringLiteral("28.0 ms · 96% sync"));
    // The x axis holds the longest bar.
    QVERIFY(chart.plot()->xAxis->range().upper >= 28.0);

    // A newer interval replaces the bars.
    store.ingest(stepMessage(1, 10, normalTimes()));
    chart.sync();
    QCOMPARE(barValue(chart, StepPart::Data, 1), 1.2);
  }

  void legendNamesEveryPart() {
    TimeChart chart;
    QCOMPARE(legendNames(chart),
             (QStringList{"data", "forward", "backward", "comm", "optimizer", "telemetry"}));
  }

  // A training script's breakdown (ddpdesk.phase): its "other" part stacked before telemetry and
  // listed; comm, which it did not measure, and telemetry, which took no time, not listed; no
  // sync efficiency at the bar's end.
  // A worker's run shown after it lists what it did before.
  void scriptBreakdownListsOtherAndNoComm() {
    MetricsStore script;
    script.setWorld(1);
    wire::StepTimes t = normalTimes();
    t.comm = 0;
    t.comm_measured = false;
    t.other = 1.5;
    t.step = 8.5;
    script.ingest(stepMessage(0, 5, t));
    TimeChart chart;
    chart.setSources({{QStringLiteral("script"), &script}});
    chart.sync();
    QCOMPARE(barValue(chart, StepPart::Other, 0), 1.5);
    QCOMPARE(chart.bars(StepPart::Other)->barBelow(), chart.bars(StepPart::Optimizer));
    QCOMPARE(chart.bars(StepPart::Telemetry)->barBelow(), chart.bars(StepPart::Other));
    QCOMPARE(chart.barLabel(0), QStringLiteral("8.5 ms"));
    QCOMPARE(legendNames(chart),
             (QStringList{"data", "forward", "backward", "optimizer", "other", "telemetry"}));
    // A script's own breakdown has no telemetry (the client's costs nothing measurable).
    t.telemetry = 0;
    script.ingest(stepMessage(0, 10, t));
    chart.sync();
    QCOMPARE(legendNames(chart),
             (QStringList{"data", "forward", "backward", "optimizer", "other"}));

    MetricsStore worker;
    worker.setWorld(1);
    worker.ingest(stepMessage(0, 5, normalTimes()));
    chart.setSources({{QStringLiteral("worker"), &worker}});
    chart.sync();
    QCOMPARE(legendNames(chart),
             (QStringList{"data", "forward", "backward", "comm", "optimizer", "telemetry"}));
  }

  void runAverage() {
    MetricsStore store;
    store.setWorld(2);
    store.ingest(stepMessage(0, 5, normalTimes()));
    store.ingest(stepMessage(1, 5, slowTimes(&wire::StepTimes::backward, 10.0)));
    store.ingest(stepMessage(0, 10, normalTimes()));
    store.ingest(stepMessage(1, 10, normalTimes()));
    TimeChart chart;
    chart.setSources({{QStringLiteral("run"), &store}});
    chart.sync();
    QCOMPARE(barValue(chart, StepPart::Backward, 1), 3.0);
    chart.setMode(TimeChart::Mode::Average);
    chart.sync();
    QCOMPARE(barValue(chart, StepPart::Backward, 1), 8.0);  // (13 + 3) / 2
    QCOMPARE(barValue(chart, StepPart::Backward, 0), 3.0);
  }

  void aStragglerIsNamedAtItsBar() {
    MetricsStore store;
    store.setWorld(4);
    TimeChart chart;
    chart.setSources({{QStringLiteral("run"), &store}});
    for (int i = 1; i <= 3; ++i)
      for (int r = 0; r < 4; ++r)
        store.ingest(stepMessage(r, 5 * i,
                                 r == 2 ? slowTimes(&wire::StepTimes::data, 20.0, kStragglerSteps)
                                        : normalTimes(kStragglerSteps)));
    store.flush();  // the chart's straggler watch follows the store's updates
    chart.sync();
    QCOMPARE(chart.shownRanks().size(), std::size_t(4));
    QVERIFY(chart.barLabel(2).endsWith(QStringLiteral(" · straggler")));
    QVERIFY(!chart.barLabel(1).contains(QStringLiteral("straggler")));
    QVERIFY(chart.stragglers().isFlagged(2));
    // Shown again, or not at all: the flag follows the run shown.
    chart.setSources({{QStringLiteral("run"), &store}});
    chart.sync();
    QVERIFY(chart.stragglers().isFlagged(2));
    chart.setSources({});
    chart.sync();
    QVERIFY(!chart.stragglers().isFlagged(2));
    QVERIFY(chart.shownRanks().empty());
  }

  void noBreakdownShowsANote() {
    MetricsStore store;
    store.setWorld(2);
    store.ingest(stepMessage(0, 5, std::nullopt));
    store.ingest(stepMessage(1, 5, std::nullopt));
    TimeChart chart;
    chart.setSources({{QStringLiteral("old run"), &store}});
    chart.sync();
    QVERIFY(chart.shownRanks().empty());
    QVERIFY(chart.note().startsWith(QStringLiteral("No step breakdown")));
    QCOMPARE(chart.bars(StepPart::Data)->data()->size(), 0);
    chart.setSources({});
    chart.sync();
    QCOMPARE(chart.note(), QStringLiteral("No run"));
    QVERIFY(chart.stragglers().detector().intervals() == 0);
  }

  void overlaidRunsShowTheOneWithABreakdown() {
    MetricsStore old, current;
    old.ingest(stepMessage(0, 5, std::nullopt));
    current.ingest(stepMessage(0, 5, normalTimes()));
    current.ingest(stepMessage(1, 5, normalTimes()));
    TimeChart chart;
    chart.setSources({{QStringLiteral("old"), &old}, {QStringLiteral("current"), &current}});
    chart.sync();
    QCOMPARE(chart.shownRanks(), (std::vector<int>{0, 1}));
  }

  void redrawsOnlyWhenTheStoreChanged() {
    MetricsStore store;
    store.ingest(stepMessage(0, 5, normalTimes()));
    store.ingest(stepMessage(1, 5, normalTimes()));
    TimeChart chart;
    chart.setSources({{QStringLiteral("run"), &store}});
    chart.sync();
    int replots = 0;
    connect(chart.plot(), &QCustomPlot::afterReplot, this, [&] { ++replots; });
    chart.sync();
    chart.sync();
    QCOMPARE(replots, 0);
    store.ingest(stepMessage(0, 10, normalTimes()));
    chart.sync();
    QCOMPARE(replots, 1);
    // And the timer does it on its own.
    store.ingest(stepMessage(1, 10, slowTimes(&wire::StepTimes::comm, 4.0)));
    QTRY_COMPARE(barValue(chart, StepPart::Comm, 1), 5.0);
  }
};

DDPDESK_TEST_MAIN(TestTimeChart)
#include "test_time_chart.moc"

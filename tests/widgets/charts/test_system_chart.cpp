// The System chart follows the store's gauges like the other charts follow steps: a CPU % curve
// (left axis) and a dashed RSS curve in MiB (right axis) per rank, GPU curves once a rank sends
// GPU gauges, points only on sync (never per message), every x axis from the gauges' own
// columns, and a note while the run has no system gauges.
#include <QLabel>
#include <QtTest>

#include <qcustomplot.h>

#include "charts/charts_panel.h"
#include "charts/system_chart.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "system_gauges.h"
#include "wire.h"

using namespace ddpdesk;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Rank r at second t (step 10 t, samples 80 t once trained): CPU 50 + 10 r + t, RSS (200 + t) MiB.
void sample(MetricsStore& store, int rank, int t) {
  wire::Step s;
  s.rank = rank;
  s.step = 10 * t;
  s.samples = 80 * t;
  s.time = t;
  store.ingest(s);
  store.ingest(
      wire::Gauge{rank, gauges::kCpuPercent, 50.0 + 10 * rank + t, "%", double(t), 10 * t});
  store.ingest(wire::Gauge{rank, gauges::kRssBytes, (200.0 + t) * kMiB, "B", double(t), 10 * t});
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

}  // namespace

class TestSystemChart : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void cpuAndMemoryPerRankOnSyncOnly() {
    MetricsStore store;
    SystemChart chart;
    chart.setSources({{"run", &store}});
    QVERIFY(chart.curveNames().isEmpty());
    for (int t = 1; t <= 3; ++t)
      for (int r = 0; r < 2; ++r) sample(store, r, t);
    QVERIFY(chart.curveNames().isEmpty());  // nothing until the redraw timer (or a sync)
    chart.sync();
    QCOMPARE(chart.curveNames(),
             (QStringList{"rank 0 CPU %", "rank 1 CPU %", "rank 0 RSS", "rank 1 RSS"}));
    QCOMPARE(values(chart.curve("rank 1 CPU %")), (std::vector<double>{61, 62, 63}));
    QCOMPARE(values(chart.curve("rank 0 RSS")), (std::vector<double>{201, 202, 203}));  // MiB
    QCOMPARE(keys(chart.curve("rank 0 RSS")), (std::vector<double>{10, 20, 30}));       // steps
    // Memory on the right axis, dashed, in its rank's colour; CPU on the left.
    const SmoothedGraph* rss = chart.curve("rank 1 RSS");
    QCOMPARE(rss->legendPlottable()->valueAxis(), chart.plot()->yAxis2);
    QCOMPARE(rss->legendPlottable()->pen().style(), Qt::DashLine);
    QCOMPARE(rss->legendPlottable()->pen().color(), SeriesChart::paletteColor(1));
    QCOMPARE(chart.curve("rank 1 CPU %")->legendPlottable()->valueAxis(), chart.plot()->yAxis);
    QVERIFY(chart.plot()->yAxis2->visible());

    sample(store, 0, 4);  // incremental: only the new point is fed
    chart.sync();
    QCOMPARE(chart.curve("rank 0 CPU %")->size(), 4);
    QCOMPARE(chart.curve("rank 1 CPU %")->size(), 3);
  }

  void everyXAxisComesFromTheGauges() {
    MetricsStore store;
    SystemChart chart;
    chart.setSources({{"run", &store}});
    for (int t = 1; t <= 3; ++t) sample(store, 0, t);
    chart.setXAxis(XAxis::WallTime);
    QCOMPARE(keys(chart.curve("rank 0 CPU %")), (std::vector<double>{1, 2, 3}));
    chart.setXAxis(XAxis::Samples);
    QCOMPARE(keys(chart.curve("rank 0 CPU %")), (std::vector<double>{80, 160, 240}));
  }

  // The system chart draws no evaluation point, so no x axis maps the global series' steps to
  // keys, neither on a sync nor in a worker's rebuild: at a million steps that mapping stalled
  // the GUI thread for tens of milliseconds per axis switch. (The loss chart, which draws them,
  // maps every step: test_charts' evalKeysAreMappedOnEveryXAxis.)
  void mapsNoGlobalKeysOnAnyXAxis() {
    MetricsStore store;
    SystemChart chart;
    chart.setSources({{"run", &store}});
    for (int t = 1; t <= 50; ++t) sample(store, 0, t);
    for (XAxis axis : {XAxis::WallTime, XAxis::Samples}) {
      chart.setXAxis(axis);
      chart.sync();
      QCOMPARE(chart.curve("rank 0 CPU %")->size(), 50);
      QCOMPARE(chart.mappedGlobalKeys(0), std::size_t(0));
    }
    chart.setAsyncThreshold(0);  // the same through a rebuild on the worker thread
    chart.setXAxis(XAxis::WallTime);
    QTRY_VERIFY(!chart.isLoading());
    sample(store, 0, 51);
    chart.sync();
    QCOMPARE(chart.curve("rank 0 CPU %")->size(), 51);
    QCOMPARE(chart.mappedGlobalKeys(0), std::size_t(0));
  }

  void gpuCurvesWhenARankHasAGpu() {
    MetricsStore store;
    SystemChart chart;
    chart.setSources({{"run", &store}});
    sample(store, 0, 1);
    chart.sync();
    QVERIFY(!chart.curveNames().contains("rank 0 GPU %"));
    store.ingest(wire::Gauge{0, gauges::kGpuUtilPercent, 87, "%", 1.0, 10});
    store.ingest(wire::Gauge{0, gauges::kGpuMemoryUsedBytes, 4096 * kMiB, "B", 1.0, 10});
    chart.sync();
    QVERIFY(chart.curveNames().contains("rank 0 GPU %"));
    QCOMPARE(values(chart.curve("rank 0 GPU %")), std::vector<double>{87});
    QCOMPARE(values(chart.curve("rank 0 GPU mem")), std::vector<double>{4096});
    QCOMPARE(chart.curve("rank 0 GPU mem")->legendPlottable()->valueAxis(), chart.plot()->yAxis2);
  }

  // A CUDA worker's caching-allocator gauges, as lines on the wire: a dashed curve each, in MiB
  // on the memory axis.
  void allocatorCurvesFromWireLines() {
    MetricsStore store;
    SystemChart chart;
    chart.setSources({{"run", &store}});
    sample(store, 1, 1);
    for (
        const char* line :
        {R"({"type":"gauge","rank":1,"name":"gpu_allocated_bytes","value":1073741824,"unit":"B","time":1.0,"step":10})",
         R"({"type":"gauge","rank":1,"name":"gpu_reserved_bytes","value":2147483648,"unit":"B","time":1.0,"step":10})",
         R"({"type":"gauge","rank":1,"name":"gpu_peak_bytes","value":1610612736,"unit":"B","time":1.0,"step":10})"}) {
      const wire::Decoded d = wire::decode(line);
      QVERIFY2(d.message.has_value(), line);
      store.ingest(*d.message);
    }
    chart.sync();
    QCOMPARE(values(chart.curve("rank 1 GPU allocated")), std::vector<double>{1024});
    QCOMPARE(values(chart.curve("rank 1 GPU reserved")), std::vector<double>{2048});
    QCOMPARE(values(chart.curve("rank 1 GPU peak")), std::vector<double>{1536});
    QCOMPARE(chart.curve("rank 1 GPU peak")->legendPlottable()->valueAxis(), chart.plot()->yAxis2);
    QVERIFY(!chart.curveNames().contains("rank 0 GPU allocated"));
  }

  void noteWhileTheRunHasNoSystemGauges() {
    MetricsStore store;
    SystemChart chart;
    chart.setSources({});  // the window before any run
    chart.sync();
    QCOMPARE(chart.noteText(), QStringLiteral("No run"));
    chart.setSources({{"run", &store}});  // started, nothing reported yet
    chart.sync();
    QCOMPARE(chart.noteText(), QStringLiteral("No system metrics yet"));
    wire::Step s;
    s.step = 1;
    store.ingest(s);
    chart.sync();
    QVERIFY(chart.showsNote());
    QCOMPARE(chart.noteText(), QStringLiteral("No system metrics in this run"));
    sample(store, 0, 1);
    chart.sync();
    QVERIFY(!chart.showsNote());
  }

  // The charts panel has it beside the others, on the x axis they share.
  void thePanelFeedsIt() {
    MetricsStore store;
    ChartsPanel panel;
    panel.setSources({{"run", &store}}, true);
    sample(store, 0, 1);
    sample(store, 0, 2);
    panel.systemChart()->sync();
    QCOMPARE(panel.systemChart()->curve("rank 0 CPU %")->size(), 2);
    panel.setXAxis(XAxis::WallTime);
    QCOMPARE(panel.systemChart()->xAxis(), XAxis::WallTime);
    QCOMPARE(keys(panel.systemChart()->curve("rank 0 CPU %")), (std::vector<double>{1, 2}));
  }
};

DDPDESK_TEST_MAIN(TestSystemChart)
#include "test_system_chart.moc"

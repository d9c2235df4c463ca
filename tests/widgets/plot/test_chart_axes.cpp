// Axes fit what they show, in a finished two-rank run as the window draws it: the last
// validation point (at the run's last step) is drawn whole inside the loss chart, and the
// validation-accuracy axis stays within 0..1 and close around the values, also for a single
// evaluation and for an accuracy of exactly 1. With DDPDESK_CHART_SHOTS=DIR the charts are also
// saved there as PNGs (QWidget::grab) for a person to look at.
#include <QDir>
#include <QtTest>
#include <cmath>

#include <qcustomplot.h>

#include "charts/loss_chart.h"
#include "charts/throughput_chart.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

constexpr int kWorld = 2, kSteps = 120;
constexpr double kMarkerRadiusPx = 3.5;  // the 7 px validation markers

// A finished two-rank run: kSteps optimizer steps, an evaluation after each of `epochs` epochs
// (the last one at the last step) with the given accuracies.
void finishedRun(MetricsStore& store, const std::vector<double>& accuracies) {
  store.setWorld(kWorld);
  const int epochs = int(accuracies.size());
  for (int n = 1; n <= kSteps; ++n) {
    for (int r = 0; r < kWorld; ++r) {
      wire::Step s;
      s.rank = r;
      s.epoch = (n - 1) * epochs / kSteps;
      s.step = n;
      s.loss = 2.0 / (1.0 + 0.1 * n) + 0.01 * r;
      s.global_loss = 2.0 / (1.0 + 0.1 * n);
      s.samples = std::int64_t(n) * 64 * kWorld;
      s.time = 0.05 * n;
      s.samples_per_s = 2500;
      store.ingest(s);
    }
    if (n % (kSteps / epochs) == 0) {
      wire::Eval e;
      e.epoch = n * epochs / kSteps - 1;
      e.step = n;
      e.loss = 1.8 / (1.0 + 0.1 * n);
      e.accuracy = accuracies[std::size_t(e.epoch)];
      store.ingest(e);
    }
  }
  store.flush();
}

// Shown at a window's size, synced, laid out and fitted to that layout.
void draw(SeriesChart& chart, const MetricsStore& store) {
  chart.setSources({{"run", &store}});
  chart.resize(900, 420);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.sync();
  chart.plot()->replot();
  chart.resetView();  // fits again with the laid-out axis rect
  chart.plot()->replot();
}

void shoot(QWidget& w, const QString& name) {
  const QString dir = qEnvironmentVariable("DDPDESK_CHART_SHOTS");
  if (!dir.isEmpty()) QVERIFY(w.grab().save(QDir(dir).filePath(name + QStringLiteral(".png"))));
}

// The point's marker lies wholly inside the axis rect.
bool markerInside(const QCPAxisRect* rect, QCPAxis* x, QCPAxis* y, double key, double value) {
  const double px = x->coordToPixel(key), py = y->coordToPixel(value);
  const QRect r = rect->rect();
  return px - kMarkerRadiusPx >= r.left() && px + kMarkerRadiusPx <= r.right() &&
         py - kMarkerRadiusPx >= r.top() && py + kMarkerRadiusPx <= r.bottom();
}

double largestTick(QCPAxis* axis) {
  double m = -INFINITY;
  for (double t : axis->tickVector())
    if (axis->range().contains(t)) m = std::max(m, t);
  return m;
}

}  // namespace

class TestChartAxes : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void lastValidationPointIsDrawnWhole() {
    MetricsStore store;
    finishedRun(store, {0.81, 0.86});
    LossChart chart;
    draw(chart, store);
    shoot(chart, QStringLiteral("loss"));
    QCustomPlot* p = chart.plot();
    const EvalSeries& e = store.evals();
    QCOMPARE(int(e.size()), 2);
    QCOMPARE(e.step[1], double(kSteps));  // at the right end of every curve
    for (std::size_t i = 0; i < e.size(); ++i)
      QVERIFY2(markerInside(p->axisRect(), p->xAxis, p->yAxis, e.step[i], e.loss[i]),
               qPrintable(QStringLiteral("validation point %1 at x=%2 px, axis rect right %3")
                              .arg(i)
                              .arg(p->xAxis->coordToPixel(e.step[i]))
                              .arg(p->axisRect()->rect().right())));
    // The lines still start and end near the edges: a marker's width, not a wide margin.
    QVERIFY(p->xAxis->range().upper - kSteps < 0.05 * kSteps);
    QVERIFY(p->xAxis->range().lower > 1 - 0.05 * kSteps);
  }

  // A run of a few steps: the step axis ticks at whole steps only (not 2.5, 7.5, ...); the wall
  // time axis may tick between seconds.
  void aShortRunsStepAxisTicksAtWholeSteps() {
    MetricsStore store;
    store.setWorld(1);
    for (int n = 1; n <= 4; ++n) {
      wire::Step s;
      s.step = n;
      s.loss = s.global_loss = 1.0 / n;
      s.samples = 64 * n;
      s.time = 0.3 * n;
      store.ingest(s);
    }
    store.flush();
    LossChart chart;
    draw(chart, store);
    QStringList ticks;
    bool whole = true;
    for (double t : chart.plot()->xAxis->tickVector()) {
      ticks << QString::number(t);
      whole = whole && t == std::round(t);
    }
    QVERIFY2(whole && !ticks.isEmpty(), qPrintable(ticks.join(QLatin1Char(' '))));
    chart.setXAxis(XAxis::WallTime);
    chart.sync();
    chart.resetView();
    chart.plot()->replot();
    bool fractional = false;
    for (double t : chart.plot()->xAxis->tickVector())
      fractional = fractional || t != std::round(t);
    QVERIFY(fractional);  // 0.3 .. 1.2 s
  }

  void accuracyAxisStaysWithinZeroToOne() {
    MetricsStore store;
    finishedRun(store, {0.81, 0.86});
    ThroughputChart chart;
    draw(chart, store);
    shoot(chart, QStringLiteral("throughput"));
    QCustomPlot* p = chart.plot();
    const QCPRange r = p->yAxis2->range();
    QVERIFY2(r.lower >= 0 && largestTick(p->yAxis2) <= 1.0,
             qPrintable(QStringLiteral("accuracy axis %1 .. %2").arg(r.lower).arg(r.upper)));
    QVERIFY2(
        r.upper - r.lower < 0.2,
        qPrintable(
            QStringLiteral("accuracy axis %1 .. %2 for 0.81 and 0.86").arg(r.lower).arg(r.upper)));
    const EvalSeries& e = store.evals();
    for (std::size_t i = 0; i < e.size(); ++i)
      QVERIFY(markerInside(p->axisRect(), p->xAxis, p->yAxis2, e.step[i], e.accuracy[i]));
  }

  void oneEvaluationGetsANarrowAxis() {
    // One epoch, one accuracy: the axis used to run from 0.4 to 1.2 around it.
    MetricsStore store;
    finishedRun(store, {0.85});
    ThroughputChart chart;
    draw(chart, store);
    QCustomPlot* p = chart.plot();
    const QCPRange r = p->yAxis2->range();
    QVERIFY2(
        r.lower >= 0.7 && r.upper <= 1.0 + 0.01 && largestTick(p->yAxis2) <= 1.0,
        qPrintable(QStringLiteral("accuracy axis %1 .. %2 for 0.85").arg(r.lower).arg(r.upper)));
    QVERIFY(markerInside(p->axisRect(), p->xAxis, p->yAxis2, kSteps, 0.85));
  }

  void perfectAccuracyIsShownWholeWithoutTicksAboveOne() {
    MetricsStore store;
    finishedRun(store, {0.97, 1.0});
    ThroughputChart chart;
    draw(chart, store);
    QCustomPlot* p = chart.plot();
    QVERIFY(largestTick(p->yAxis2) <= 1.0);
    QVERIFY(p->yAxis2->range().upper < 1.01);
    QVERIFY(markerInside(p->axisRect(), p->xAxis, p->yAxis2, kSteps, 1.0));
  }
};

DDPDESK_TEST_MAIN(TestChartAxes)
#include "test_chart_axes.moc"

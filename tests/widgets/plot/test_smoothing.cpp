// TensorBoard's debiased EMA, checked against the formula written out independently here, both
// as the pure function and as drawn by the loss chart.
#include <QtTest>
#include <cmath>
#include <random>

#include <qcustomplot.h>

#include "charts/loss_chart.h"
#include "metrics/metrics_store.h"
#include "plot/smoothing.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

// TensorBoard (tf-smoothing): last = last * w + (1 - w) * v; debiased = last / (1 - w^n).
std::vector<double> reference(const std::vector<double>& v, double w) {
  std::vector<double> out;
  double last = 0;
  int n = 0;
  for (double x : v) {
    if (!std::isfinite(x)) {
      out.push_back(x);
      continue;
    }
    last = last * w + (1 - w) * x;
    ++n;
    out.push_back(last / (1 - std::pow(w, n)));
  }
  return out;
}

std::vector<double> noisy(int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> noise(0.0, 0.1);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(2.0 / (1.0 + 0.01 * i) + noise(gen));
  return v;
}

}  // namespace

class TestSmoothing : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void matchesReference_data() {
    QTest::addColumn<double>("weight");
    for (double w : {0.0, 0.3, 0.6, 0.9, 0.99, 0.999})
      QTest::newRow(qPrintable(QString::number(w))) << w;
  }
  void matchesReference() {
    QFETCH(double, weight);
    const auto v = noisy(5000, 7);
    const auto got = debiasedEma(v, weight);
    const auto want = reference(v, weight);
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      QVERIFY2(std::fabs(got[i] - want[i]) <= 1e-12 * std::max(1.0, std::fabs(want[i])),
               qPrintable(QStringLiteral("i=%1 got %2 want %3").arg(i).arg(got[i]).arg(want[i])));
  }

  void firstPointIsUnbiasedAndConstantsStay() {
    // Debiasing: the first smoothed value is the first raw value, not (1-w) times it.
    QCOMPARE(debiasedEma({5.0, 5.0, 5.0}, 0.9)[0], 5.0);
    for (double s : debiasedEma(std::vector<double>(100, 3.25), 0.95))
      QVERIFY(std::fabs(s - 3.25) < 1e-12);
  }

  void nonFiniteValuesPassThrough() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto got = debiasedEma({1.0, nan, 3.0}, 0.5);
    QVERIFY(std::isnan(got[1]));
    QCOMPARE(got[2], reference({1.0, nan, 3.0}, 0.5)[2]);
  }

  void incrementalEqualsBatch() {
    const auto v = noisy(1000, 3);
    EmaSmoother s(0.8);
    const auto batch = debiasedEma(v, 0.8);
    for (std::size_t i = 0; i < v.size(); ++i) QCOMPARE(s.next(v[i]), batch[i]);
  }

  void chartDrawsTheReferenceCurve() {
    // The loss chart's smoothed global curve, fed in several increments, then re-smoothed with
    // another weight, equals the reference; the raw curve keeps the raw values.
    MetricsStore store;
    const auto v = noisy(3000, 11);
    LossChart chart;
    chart.resize(1200, 500);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.setSmoothing(0.6);
    chart.setSources({{QStringLiteral("run"), &store}});
    for (int i = 0; i < int(v.size()); ++i) {
      wire::Step s;
      s.rank = 0;
      s.step = i + 1;
      s.loss = v[i];
      s.global_loss = v[i];
      store.ingest(s);
      if (i % 700 == 0) chart.sync();
    }
    chart.sync();
    auto check = [&](double w) {
      const SmoothedGraph* g = chart.curve(LossChart::globalCurveName());
      QVERIFY(g);
      const auto want = reference(v, w);
      const LodSeries& smooth = g->smoothedSeries();
      QCOMPARE(smooth.size(), v.size());
      QCOMPARE(g->rawSeries().size(), v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        QCOMPARE(smooth.key(i), double(i + 1));
        QVERIFY(std::fabs(smooth.value(i) - want[i]) < 1e-12);
        QCOMPARE(g->rawSeries().value(i), v[i]);
      }
      // What the graph draws, with fewer points than pixels can show, is those very points.
      g->smoothed()->parentPlot()->replot();
      QCOMPARE(g->smoothed()->data()->size(), int(v.size()));
      QVERIFY(std::fabs(g->smoothed()->data()->at(1234)->value - want[1234]) < 1e-12);
    };
    check(0.6);
    chart.setSmoothing(0.95);
    check(0.95);
  }
};

DDPDESK_TEST_MAIN(TestSmoothing)
#include "test_smoothing.moc"

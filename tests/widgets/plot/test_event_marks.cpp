// A run's restarts on its charts (event_marks.h): a dashed vertical line labelled "restart N" at
// the step of each restart event in the record (with its cause), moved with the x axis (samples:
// the run's samples at that step), none for a run without restarts, and one per run when runs
// overlay. With DDPDESK_CHART_SHOTS=DIR the chart is also saved there as a PNG.
#include <QDir>
#include <QtTest>

#include <qcustomplot.h>

#include "charts/loss_chart.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

constexpr int kWorld = 2, kSteps = 120, kRestartStep = 57;

void run(MetricsStore& store, bool restarted, int restartStep = kRestartStep) {
  store.setWorld(kWorld);
  for (int n = 1; n <= kSteps; ++n) {
    for (int r = 0; r < kWorld; ++r) {
      wire::Step s;
      s.rank = r;
      s.step = n;
      s.loss = 2.0 / (1.0 + 0.1 * n) + 0.01 * r;
      s.global_loss = 2.0 / (1.0 + 0.1 * n);
      s.samples = std::int64_t(n) * 64 * kWorld;
      s.time = 0.05 * n;
      store.ingest(s);
    }
    if (restarted && n == restartStep) {
      wire::Event e;
      e.event = "restart";
      e.step = n;
      e.detail = "rank 1 was killed by signal 9 (SIGKILL)";
      store.ingest(e);
    }
    if (n % 60 == 0) {
      wire::Eval e;
      e.step = n;
      e.epoch = n / 60 - 1;
      e.loss = 1.0;
      store.ingest(e);
    }
  }
  store.flush();
}

// The visible vertical lines' x and the labels, as drawn.
std::vector<double> lineKeys(QCustomPlot* plot) {
  std::vector<double> out;
  for (int i = 0; i < plot->itemCount(); ++i)
    if (auto* l = qobject_cast<QCPItemStraightLine*>(plot->item(i)); l && l->visible())
      out.push_back(l->point1->key());
  return out;
}
QStringList labels(QCustomPlot* plot) {
  QStringList out;
  for (int i = 0; i < plot->itemCount(); ++i)
    if (auto* t = qobject_cast<QCPItemText*>(plot->item(i)); t && t->visible()) out << t->text();
  return out;
}

}  // namespace

class TestEventMarks : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void aRestartIsALineAtItsStepOnEveryAxis() {
    MetricsStore store;
    run(store, true);
    LossChart chart;
    chart.setSources({{"run", &store}});
    chart.resize(900, 420);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.sync();
    QCOMPARE(lineKeys(chart.plot()), std::vector<double>{double(kRestartStep)});
    QCOMPARE(labels(chart.plot()),
             QStringList{QStringLiteral("restart 1\nrank 1 was killed by signal 9 (SIGKILL)")});
    if (const QString dir = qEnvironmentVariable("DDPDESK_CHART_SHOTS"); !dir.isEmpty()) {
      chart.plot()->replot();
      QVERIFY(chart.grab().save(QDir(dir).filePath(QStringLiteral("restart-mark.png"))));
    }
    chart.setXAxis(XAxis::Samples);
    QTRY_VERIFY(!chart.isLoading());
    chart.sync();
    QCOMPARE(lineKeys(chart.plot()), std::vector<double>{double(kRestartStep * 64 * kWorld)});
    chart.setXAxis(XAxis::Step);
    QTRY_VERIFY(!chart.isLoading());
    chart.sync();
    QCOMPARE(lineKeys(chart.plot()), std::vector<double>{double(kRestartStep)});
  }

  // A label that would run past the right edge goes to the left of its line.
  void aLabelNearTheRightEdgeFlipsLeft() {
    for (const int step : {kRestartStep, kSteps - 2}) {
      MetricsStore store;
      run(store, true, step);
      LossChart chart;
      chart.setSources({{"run", &store}});
      chart.resize(900, 420);
      chart.show();
      QVERIFY(QTest::qWaitForWindowExposed(&chart));
      chart.sync();
      chart.plot()->replot();
      QCPItemText* label = nullptr;
      for (int i = 0; i < chart.plot()->itemCount(); ++i)
        if (auto* t = qobject_cast<QCPItemText*>(chart.plot()->item(i)); t && t->visible())
          label = t;
      QVERIFY(label);
      const bool flipped = label->positionAlignment() & Qt::AlignRight;
      QCOMPARE(flipped, step != kRestartStep);
      // Drawn inside the axis rect either way.
      const QRect area = chart.plot()->axisRect()->rect();
      QVERIFY2(label->right->pixelPosition().x() <= area.right() + 1,
               qPrintable(QString::number(label->right->pixelPosition().x())));
      QVERIFY(label->left->pixelPosition().x() >= area.left() - 1);
      if (const QString dir = qEnvironmentVariable("DDPDESK_CHART_SHOTS"); !dir.isEmpty())
        QVERIFY(
            chart.grab().save(QDir(dir).filePath(QStringLiteral("restart-mark-%1.png").arg(step))));
    }
  }

  void noRestartNoLineAndOverlaidRunsNameTheirs() {
    MetricsStore plain, restarted;
    run(plain, false);
    run(restarted, true);
    LossChart chart;
    chart.setSources({{"plain", &plain}});
    chart.sync();
    QVERIFY(lineKeys(chart.plot()).empty());
    chart.setSources({{"plain", &plain}, {"nightly", &restarted}});
    QTRY_VERIFY(!chart.isLoading());
    chart.sync();
    QCOMPARE(lineKeys(chart.plot()), std::vector<double>{double(kRestartStep)});
    QCOMPARE(labels(chart.plot()), QStringList{QStringLiteral("nightly: restart 1")});
    // The store cleared (a new run in the same window): the mark goes with it.
    restarted.clear();
    QTRY_VERIFY(!chart.isLoading());
    chart.sync();
    QVERIFY(lineKeys(chart.plot()).empty());
  }
};

DDPDESK_TEST_MAIN(TestEventMarks)
#include "test_event_marks.moc"

// "Open TensorBoard log…" in the window: the history's button asks for a directory (a chooser
// the test answers), the log is read on a worker thread, the series are offered with a loss
// suggested, and the chosen one joins the loss chart as a curve of its own, x = step, beside the
// run shown (whose per-rank curves stay); the throughput chart leaves it out, the samples axis
// too (a TensorBoard log has no sample counts); cancelling adds nothing; opening runs from the
// history replaces it.
#include <QAction>
#include <QMenuBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "charts/charts_panel.h"
#include "charts/loss_chart.h"
#include "charts/system_chart.h"
#include "charts/tensorboard_overlay.h"
#include "charts/throughput_chart.h"
#include "event_writer.h"
#include "history/history_panel.h"
#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_directory.h"
#include "system_gauges.h"
#include "window/main_window.h"

using namespace ddpdesk;

namespace {

constexpr int kTimeout = 60000;

wire::Step step(int rank, int n) {
  wire::Step s;
  s.rank = rank;
  s.step = n;
  s.loss = 2.0 / n + rank;
  s.global_loss = 2.0 / n;
  s.samples = n * 8;
  s.samples_per_s = 100;
  s.time = n * 0.1;
  return s;
}

}  // namespace

class TestTensorBoardOverlay : public QObject {
  Q_OBJECT
  QTemporaryDir home;
  QTemporaryDir logs;
  QString logDir;
  std::unique_ptr<MainWindow> w;
  MetricsStore run;
  QStringList offered;
  QString suggested;
  QString answer;  // the series the "user" picks; "?" = the suggested one, "" = cancel

  void openLog() {
    auto* button = w->history()->findChild<QPushButton*>(QStringLiteral("openTensorBoard"));
    QVERIFY(button);
    button->click();
  }

 private Q_SLOTS:
  void initTestCase() {
    test::useScratchHome(home);
    // A log like PyTorch's SummaryWriter leaves: tags in one run directory.
    logDir = logs.filePath("pylog");
    tb::EventFileWriter writer(logDir.toStdString());
    for (int i = 0; i < 30; ++i) {
      writer.add_scalar("train/lr", 1e-3, i, 1.7e9 + i);
      writer.add_scalar("train/loss", 3.0 / (i + 1), i, 1.7e9 + i);
    }
    writer.close();
    for (int n = 1; n <= 20; ++n)
      for (int r = 0; r < 2; ++r) {
        run.ingest(step(r, n));
        run.ingest(wire::Gauge{r, gauges::kCpuPercent, 50.0 + r, "%", n * 0.1, n});
      }
    run.flush();
  }

  void init() {
    w = std::make_unique<MainWindow>();
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    w->charts()->setSources({{"run", &run}}, false);
    w->tensorBoard()->setDirectoryChooser([this] { return logDir; });
    w->tensorBoard()->setSeriesChooser([this](const QStringList& names, const QString& s) {
      offered = names;
      suggested = s;
      return answer == QLatin1String("?") ? s : answer;
    });
    offered.clear();
    suggested.clear();
  }
  void cleanup() { w.reset(); }

  void overlaysTheSuggestedLossBesideTheRun() {
    answer = "?";
    const QStringList system = w->charts()->systemChart()->curveNames();
    QCOMPARE(system.size(), 2);  // CPU % of each rank
    QSignalSpy overlaid(w->tensorBoard(), &TensorBoardOverlay::overlaid);
    openLog();
    QVERIFY(overlaid.wait(kTimeout));
    QCOMPARE(offered, (QStringList{"train/loss", "train/lr"}));
    // Not a run: the other charts go on showing one run, named as before.
    QCOMPARE(w->charts()->systemChart()->curveNames(), system);
    QCOMPARE(suggested, QStringLiteral("train/loss"));
    const QString label = QStringLiteral("pylog: train/loss");
    QCOMPARE(overlaid.at(0).at(0).toString(), label);
    LossChart* loss = w->charts()->lossChart();
    QCOMPARE(loss->curveNames(), (QStringList{"rank 0", "rank 1", "global", label}));
    const SmoothedGraph* curve = loss->curve(label);
    QCOMPARE(curve->size(), 30);
    for (int i = 0; i < 30; ++i) {
      QCOMPARE(curve->rawSeries().key(std::size_t(i)), double(i));
      QCOMPARE(curve->rawSeries().value(std::size_t(i)), double(float(3.0 / (i + 1))));
    }
    QVERIFY(!w->charts()->throughputChart()->curveNames().contains(label));
    QVERIFY(w->charts()->throughputChart()->curveNames().contains("rank 0"));

    w->charts()->setXAxis(XAxis::Samples);
    QTRY_VERIFY_WITH_TIMEOUT(!loss->isLoading(), kTimeout);
    QCOMPARE(loss->curveNames(), (QStringList{"rank 0", "rank 1", "global"}));
    w->charts()->setXAxis(XAxis::WallTime);
    QTRY_VERIFY_WITH_TIMEOUT(!loss->isLoading(), kTimeout);
    QVERIFY(loss->curveNames().contains(label));
    QCOMPARE(loss->curve(label)->rawSeries().key(29), 29.0);  // seconds since its first point
  }

  void anotherSeriesAddsAnotherCurve() {
    answer = "?";
    QSignalSpy overlaid(w->tensorBoard(), &TensorBoardOverlay::overlaid);
    openLog();
    QVERIFY(overlaid.wait(kTimeout));
    answer = "train/lr";
    openLog();
    QVERIFY(overlaid.wait(kTimeout));
    QCOMPARE(w->charts()->lossChart()->curveNames(),
             (QStringList{"rank 0", "rank 1", "global", "pylog: train/loss", "pylog: train/lr"}));
    QCOMPARE(w->charts()->sources().size(), std::size_t(3));
  }

  void openingRunsFromTheHistoryReplacesIt() {
    answer = "?";
    QSignalSpy overlaid(w->tensorBoard(), &TensorBoardOverlay::overlaid);
    openLog();
    QVERIFY(overlaid.wait(kTimeout));
    QCOMPARE(w->charts()->sources().size(), std::size_t(2));
    QTemporaryDir runs;
    const QString dir = runs.filePath(QStringLiteral("past-run"));
    QVERIFY(QDir().mkpath(dir));
    QFile metrics(RunDirectory::metricsPath(dir));
    QVERIFY(metrics.open(QIODevice::WriteOnly));
    for (int n = 1; n <= 5; ++n)
      metrics.write(QByteArray::fromStdString(wire::encode(step(0, n)) + "\n"));
    metrics.close();
    w->openRuns({dir});
    QTRY_VERIFY_WITH_TIMEOUT(
        w->charts()->sources().size() == 1 && w->charts()->sources().front().label == "past-run",
        kTimeout);
    QVERIFY(!w->charts()->sources().front().imported);
    QVERIFY(!w->charts()->lossChart()->curveNames().contains("pylog: train/loss"));
  }

  void cancellingAddsNothing() {
    answer = "";
    QSignalSpy message(w->tensorBoard(), &TensorBoardOverlay::message);
    openLog();
    QTRY_VERIFY_WITH_TIMEOUT(!w->tensorBoard()->busy(), kTimeout);
    QCOMPARE(suggested, QStringLiteral("train/loss"));  // it was asked
    QCOMPARE(w->charts()->sources().size(), std::size_t(1));
    QCOMPARE(w->charts()->lossChart()->curveNames(), (QStringList{"rank 0", "rank 1", "global"}));
  }

  void aDirectoryWithoutLogsSaysSo() {
    answer = "?";
    QTemporaryDir empty;
    w->tensorBoard()->setDirectoryChooser([&] { return empty.path(); });
    QSignalSpy message(w->tensorBoard(), &TensorBoardOverlay::message);
    openLog();
    QTRY_VERIFY_WITH_TIMEOUT(!w->tensorBoard()->busy(), kTimeout);
    QVERIFY(offered.isEmpty());  // nothing to choose from: not asked
    QVERIFY(message.size() >= 2);
    QVERIFY2(message.last().at(0).toString().contains("no events.out.tfevents.* file"),
             qPrintable(message.last().at(0).toString()));
    QCOMPARE(w->charts()->sources().size(), std::size_t(1));
  }

  void theFileMenuOffersItToo() {
    bool found = false;
    for (QAction* menu : w->menuBar()->actions())
      for (QAction* a : menu->menu() ? menu->menu()->actions() : QList<QAction*>())
        found = found || a->text() == QStringLiteral("Open TensorBoard log…");
    QVERIFY(found);
  }
};

DDPDESK_TEST_MAIN(TestTensorBoardOverlay)
#include "test_tensorboard_overlay.moc"

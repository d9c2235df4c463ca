// The comparison window on hand-made run directories (offscreen): N runs give N overlaid curves
// in the loss and throughput charts and N table rows; the difference plot of two runs shows the
// numbers worked out by hand in test_run_comparison (max 0.1 at step 2, RMS sqrt(0.005) on
// the step axis; max 0.6 at 96 samples); the table exports as the core's CSV, the chart as a PNG;
// a directory that is not a run is reported in one line; the history's Compare button asks for
// the selected runs.
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QtTest>
#include <cmath>

#include <qcustomplot.h>

#include "charts/loss_chart.h"
#include "charts/throughput_chart.h"
#include "compare/comparison_table_model.h"
#include "compare/comparison_window.h"
#include "compare/difference_chart.h"
#include "compare_fixture.h"
#include "event_writer.h"
#include "history/history_panel.h"
#include "qt_test_main.h"
#include "tensorboard_fixture.h"
#include "window/main_window.h"

using namespace ddpdesk;
using namespace ddpdesk::testing;

class TestComparisonWindow : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> tmp;
  QStringList dirs;

  // With DDPDESK_COMPARE_SCREENSHOT=<file.png>: a grab of the window on the runs listed in
  // DDPDESK_COMPARE_RUNS (colon-separated; default this test's), for the docs and a look.
  void saveScreenshot() {
    const QString out = qEnvironmentVariable("DDPDESK_COMPARE_SCREENSHOT");
    if (out.isEmpty()) return;
    QStringList runs = qEnvironmentVariable("DDPDESK_COMPARE_RUNS").split(QLatin1Char(':'));
    if (runs.size() < 2) runs = dirs;
    ComparisonWindow w;
    w.resize(1400, 900);
    w.show();
    QVERIFY(loadInto(w, runs));
    w.differenceChart()->sync();
    QTest::qWait(300);
    QVERIFY(w.grab().save(out));
  }

  // Loads `paths` through the window's own asynchronous loader.
  bool loadInto(ComparisonWindow& w, const QStringList& paths) {
    QSignalSpy loaded(&w, &ComparisonWindow::loaded);
    w.load(paths);
    if (!loaded.wait(10000)) return false;
    w.lossChart()->sync();
    w.throughputChart()->sync();
    return true;
  }

 private Q_SLOTS:
  void init() {
    tmp = std::make_unique<QTemporaryDir>();
    QVERIFY(tmp->isValid());
    dirs = QStringList{tmp->filePath("run-a"), tmp->filePath("run-b"), tmp->filePath("run-c")};
    auto a = lossCurve({{1, 1.0}, {2, 0.8}, {3, 0.6}, {4, 0.4}, {5, 0.2}}, 32);
    a.push_back(evalMessage(5, 0.3, 0.9));
    QVERIFY(writeRun(dirs[0], compareSpec(32, 1, "/r/a", "fmnist-mlp"), a));
    QVERIFY(writeRun(dirs[1], compareSpec(16, 2, "/r/b", "fmnist-mlp"),
                     lossCurve({{2, 0.9}, {4, 0.4}, {6, 0.0}}, 16)));
    QVERIFY(writeRun(dirs[2], compareSpec(8, 4, "/r/c", "fmnist-mlp"),
                     lossCurve({{1, 1.1}, {3, 0.7}, {5, 0.3}}, 8)));
  }
  void cleanup() { tmp.reset(); }

  // Its table sits below the charts: on a 1024 x 768 screen the whole window must fit.
  void fitsASmallScreen() {
    ComparisonWindow w;
    QVERIFY(loadInto(w, dirs));
    const QSize min = w.minimumSizeHint().expandedTo(w.minimumSize());
    QVERIFY2(min.width() <= 1024 && min.height() <= 700,
             qPrintable(QStringLiteral("minimum %1 x %2").arg(min.width()).arg(min.height())));
  }

  void showsACurveAndARowPerRun() {
    ComparisonWindow w;
    QVERIFY(loadInto(w, dirs));
    QCOMPARE(w.runs().size(), std::size_t(3));
    const QStringList labels{"run-a", "run-b", "run-c"};
    // Loss chart: each run's global loss under its name, plus run A's validation points.
    QStringList names = w.lossChart()->curveNames();
    for (const QString& l : labels) {
      QVERIFY2(names.contains(l), qPrintable(names.join(", ")));
      QCOMPARE(w.lossChart()->curve(l)->size(), l == "run-a" ? 5 : 3);
    }
    QCOMPARE(names.size(), 4);
    QVERIFY(names.contains(QStringLiteral("run-a (val.)")));
    // Throughput chart: each run's samples/s, plus run A's accuracy.
    names = w.throughputChart()->curveNames();
    for (const QString& l : labels) QVERIFY2(names.contains(l), qPrintable(names.join(", ")));
    QCOMPARE(names.size(), 4);
    // The table: a row per run, with the fields that differ.
    QCOMPARE(w.tableModel()->rowCount(), 3);
    QCOMPARE(w.tableModel()->table().fields, (QStringList{"accum_steps", "batch_size"}));
    QCOMPARE(w.tableModel()->index(2, 1).data().toString(), QStringLiteral("4"));
    QCOMPARE(w.tableModel()->index(1, 0).data(Qt::DecorationRole).value<QColor>(),
             SeriesChart::paletteColor(1));
    saveScreenshot();
  }

  // Open at a small screen's width before the runs load (as from the history): the run pickers
  // keep the runs' names whole once they come, and the text beside them wraps instead.
  void theRunPickersShowTheRunsWhole() {
    ComparisonWindow w;
    w.resize(1000, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // Named as the history names them: a time stamp, then the run's name.
    QStringList named;
    for (const QString& d : dirs.mid(0, 2)) {
      named << tmp->filePath(QStringLiteral("20261206-083554-") + QFileInfo(d).fileName());
      QVERIFY(QDir().rename(d, named.back()));
    }
    QVERIFY(loadInto(w, named));
    QVERIFY(!w.differenceText().isEmpty());
    QTest::qWait(0);  // the layout's pass after the text changed
    for (const char* picker : {"diffOther", "diffReference"}) {
      auto* box = w.findChild<QComboBox*>(QLatin1String(picker));
      QVERIFY(box);
      QVERIFY2(box->width() >= box->sizeHint().width(),
               qPrintable(QStringLiteral("%1: %2 px of %3")
                              .arg(QLatin1String(picker))
                              .arg(box->width())
                              .arg(box->sizeHint().width())));
    }
  }

  // Runs named as the history names them differ only at their ends: every legend entry of
  // both charts is as wide as its text, in a window of the default size and in a narrow one.
  void theLegendsShowTheRunsNamesWhole() {
    QStringList named;
    const char* names[] = {"20261207-100108-cmp32", "20261207-100109-cmp33",
                           "20261207-100110-cmp34"};
    for (int i = 0; i < 3; ++i) {
      named << tmp->filePath(QLatin1String(names[i]));
      QVERIFY(QDir().rename(dirs[i], named.back()));
    }
    ComparisonWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(loadInto(w, named));
    for (const QSize size : {QSize(1300, 850), QSize(900, 700)}) {
      w.resize(size);
      QTest::qWait(0);
      for (SeriesChart* chart : {static_cast<SeriesChart*>(w.lossChart()),
                                 static_cast<SeriesChart*>(w.throughputChart())}) {
        chart->plot()->replot();
        QCPLegend* legend = chart->plot()->legend;
        QVERIFY(legend->itemCount() >= 3);
        for (int i = 0; i < legend->itemCount(); ++i) {
          QCPAbstractLegendItem* item = legend->item(i);
          QVERIFY2(item->outerRect().width() >= item->minimumOuterSizeHint().width(),
                   qPrintable(QStringLiteral("%1 px wide, %2 px wide: %3 of %4 px")
                                  .arg(size.width())
                                  .arg(chart->plot()->width())
                                  .arg(item->outerRect().width())
                                  .arg(item->minimumOuterSizeHint().width())));
        }
      }
    }
  }

  void differencePlotStatesMaxAndRms() {
    ComparisonWindow w;
    QVERIFY(loadInto(w, dirs));
    // Default: the second run against the first, global loss, on steps: at B's steps 2 and 4
    // (B has fewer points in the common range 2..5), deltas 0.1 and 0.
    QCOMPARE(w.difference().points, std::size_t(2));
    QVERIFY(std::abs(w.difference().maxAbs - 0.1) < 1e-12);
    QVERIFY(std::abs(w.difference().rms - std::sqrt(0.005)) < 1e-12);
    QVERIFY2(
        w.differenceText().contains(QStringLiteral("max |difference| 0.1 at step 2, RMS 0.0707")),
        qPrintable(w.differenceText()));
    const QString name = QStringLiteral("run-b − run-a");
    QCOMPARE(w.differenceChart()->pointCount(), std::size_t(2));
    w.differenceChart()->sync();
    QCOMPARE(w.differenceChart()->curveNames(), QStringList{name});
    QCOMPARE(w.differenceChart()->curve(name)->size(), 2);
    // On samples the numbers change with the axis (max 0.6 at 96 samples).
    w.setXAxis(CompareX::Samples);
    QVERIFY(std::abs(w.difference().maxAbs - 0.6) < 1e-12);
    QCOMPARE(w.difference().maxAt, 96.0);
    // Another pair: C − A at C's steps 1, 3, 5 (C has fewer points), 0.1 a piece (1.1-1.0,
    // 0.7-0.6, 0.3-0.2).
    w.setXAxis(CompareX::Step);
    w.setDifference(0, 2, CompareMetric::Loss);
    QCOMPARE(w.difference().points, std::size_t(3));
    QVERIFY(std::abs(w.difference().rms - 0.1) < 1e-12);
    // Same x only: steps 1, 3, 5 too.
    w.setMatching(Matching::Exact);
    QCOMPARE(w.difference().points, std::size_t(3));
    // A run against itself is no difference to plot.
    w.setDifference(1, 1, CompareMetric::Loss);
    QCOMPARE(w.difference().points, std::size_t(0));
    QCOMPARE(w.differenceChart()->pointCount(), std::size_t(0));
  }

  void exportsTheTableAsCsvAndTheChartAsPng() {
    ComparisonWindow w;
    QVERIFY(loadInto(w, dirs));
    const QString csv = tmp->filePath("t.csv"), png = tmp->filePath("c.png");
    QString error;
    QVERIFY2(w.exportTableCsv(csv, &error), qPrintable(error));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QCOMPARE(text, tableCsv(w.runs(), CompareX::Step, Matching::Interpolate));
    QCOMPARE(text.count('\n'), 4);
    QVERIFY(text.startsWith("run,path,accum_steps,batch_size,"));
    w.resize(1000, 700);
    QVERIFY(w.exportChartPng(png));
    QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() >= 800);
  }

  void aTensorBoardLogIsAddedAsAnImportedCurve() {
    const QString log = tmp->filePath("pytorch");
    {
      tb::EventFileWriter w(log.toStdString());
      for (int i = 1; i <= 5; ++i) w.add_scalar("train/loss", 1.2 - 0.2 * i, i, 100.0 + i);
    }
    ComparisonWindow w;
    QVERIFY(loadInto(w, {dirs[0], dirs[1]}));
    w.setDirectoryChooser([&] { return log; });
    QSignalSpy loaded(&w, &ComparisonWindow::loaded);
    w.addTensorBoardDialog();
    QVERIFY(loaded.wait(10000));
    QCOMPARE(w.runs().size(), std::size_t(3));
    QVERIFY(w.runs()[2].imported);
    w.lossChart()->sync();
    QVERIFY2(w.lossChart()->curveNames().contains(QStringLiteral("pytorch/train/loss")),
             qPrintable(w.lossChart()->curveNames().join(", ")));
    // The same losses as run A (1.0 .. 0.2), stored as float32 by TensorBoard.
    w.setDifference(0, 2, CompareMetric::Loss);
    QCOMPARE(w.difference().points, std::size_t(5));
    QVERIFY(w.difference().maxAbs < 1e-7);
  }

  void aCorruptTensorBoardLogIsSaidUnderTheButtons() {
    const QString log = tmp->filePath("corrupt");
    const QString file = tensorBoardLog(log, 20, 200);
    QVERIFY(!file.isEmpty());
    ComparisonWindow w;
    QVERIFY(loadInto(w, {dirs[0], log}));
    QCOMPARE(w.runs().size(), std::size_t(2));
    auto* status = w.findChild<QLabel*>(QStringLiteral("compareStatus"));
    QVERIFY(status);
    QVERIFY2(status->text().startsWith(QFileInfo(file).absoluteFilePath() + ": record ") &&
                 status->text().contains("data CRC mismatch"),
             qPrintable(status->text()));
    // A comparison read whole says nothing there.
    QVERIFY(loadInto(w, {dirs[0], dirs[1]}));
    QCOMPARE(status->text(), QString());
  }

  void aNewerLoadSupersedesOneStillReading() {
    ComparisonWindow w;
    QSignalSpy loaded(&w, &ComparisonWindow::loaded);
    w.load(dirs);
    w.load({dirs[2], dirs[0]});
    QVERIFY(loaded.wait(10000));
    // Every read of both loads has ended (they run on the global thread pool) and what they
    // posted back has been delivered: the first load, had it survived, has reported by now.
    QVERIFY(QThreadPool::globalInstance()->waitForDone(60000));
    for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
    QCOMPARE(loaded.size(), 1);
    QCOMPARE(w.runs().size(), std::size_t(2));
    QCOMPARE(w.runs()[0].label, QStringLiteral("run-c"));
  }

  void aDirectoryThatIsNotARunIsReported() {
    ComparisonWindow w;
    QSignalSpy message(&w, &ComparisonWindow::message);
    const QString empty = tmp->filePath("empty");
    QVERIFY(QDir().mkpath(empty));
    w.load({dirs[0], empty});
    QTRY_COMPARE(message.size(), 1);
    const QString text = message.front().front().toString();
    QVERIFY2(text.contains(QStringLiteral("is not a run: no spec.json")), qPrintable(text));
    QVERIFY(!text.contains(QLatin1Char('\n')));
    QVERIFY(w.runs().empty());
  }

  void historyCompareAsksForTheSelectedRuns() {
    HistoryPanel history;
    history.setRoot(tmp->path());
    history.refresh();
    auto* button = history.findChild<QPushButton*>(QStringLiteral("compareRuns"));
    QVERIFY(button);
    history.selectPaths({dirs[0]});
    QVERIFY(!button->isEnabled());  // one run: nothing to compare it with
    history.selectPaths({dirs[0], dirs[2]});
    QVERIFY(button->isEnabled());
    QSignalSpy asked(&history, &HistoryPanel::compareRequested);
    button->click();
    QCOMPARE(asked.size(), 1);
    QStringList paths = asked.front().front().toStringList();
    paths.sort();
    QCOMPARE(paths, (QStringList{QFileInfo(dirs[0]).absoluteFilePath(),
                                 QFileInfo(dirs[2]).absoluteFilePath()}));
  }

  void theMainWindowOpensAComparisonFromTheHistory() {
    // The window's settings and run history live in the test's directory.
    qputenv("XDG_DATA_HOME", tmp->filePath("data").toUtf8());
    qputenv("XDG_CONFIG_HOME", tmp->filePath("config").toUtf8());
    MainWindow main;
    main.history()->setRoot(tmp->path());
    main.history()->refresh();
    main.history()->selectPaths({dirs[1], dirs[2]});
    main.history()->findChild<QPushButton*>(QStringLiteral("compareRuns"))->click();
    const auto windows = main.findChildren<ComparisonWindow*>();
    QCOMPARE(windows.size(), 1);
    QVERIFY(windows.front()->isWindow());
    QTRY_COMPARE(windows.front()->runs().size(), std::size_t(2));
    QCOMPARE(windows.front()->tableModel()->rowCount(), 2);
  }
};

DDPDESK_TEST_MAIN(TestComparisonWindow)
#include "test_comparison_window.moc"

// The window as a newcomer first sees it (no settings yet): it opens on a run worth watching
// (Fashion-MNIST, the MLP, two processes), the dataset size names the task's real default
// instead of a bare 0 (and still means "the task's default"), and the progress bar says there
// is no run rather than "step 0 / 1"; once a run starts and ends, it shows that run's steps.
#include <QApplication>
#include <QLineEdit>
#include <QLocale>
#include <QProgressBar>
#include <QScreen>
#include <QTemporaryDir>
#include <QtTest>

#include "charts/charts_panel.h"
#include "form/run_spec_form.h"
#include "form/spec_settings.h"
#include "live/run_status_strip.h"
#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "window/main_window.h"
#include "window/screen_fit.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {
constexpr int kTimeout = 60000;  // small shared CI machines: never a timing test
}

class TestFirstLaunch : public QObject {
  Q_OBJECT
  QTemporaryDir home;

  QLineEdit* datasetEdit(const MainWindow& w) {
    return qobject_cast<QLineEdit*>(w.form()->editor(QStringLiteral("dataset_size")));
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(home.isValid());
    useScratchHome(home, "ddpdesk-first-launch");
  }

  void opensOnATwoProcessFashionMnistRun() {
    QVERIFY(!loadLastSpec());  // a first launch: nothing remembered
    MainWindow w;
    const RunSpec s = w.form()->spec();
    QCOMPARE(s.task, std::string("fmnist-mlp"));
    QCOMPARE(s.nproc, 2);
    QCOMPARE(s.device, std::string("cpu"));
    QVERIFY(s.batch_size > 1 && s.epochs >= 1);
    QVERIFY2(w.form()->isValid() || w.form()->waitingOnly(),
             qPrintable(QStringList(w.form()->errors().values()).join('\n')));
    QCOMPARE(w.form()->fieldText(QStringLiteral("task")), QStringLiteral("fmnist-mlp"));
  }

  void datasetSizeShowsTheTasksRealDefault() {
    MainWindow w;
    QLineEdit* edit = datasetEdit(w);
    QVERIFY(edit);
    QCOMPARE(edit->text(), QString());  // never a bare "0"
    QVERIFY2(edit->placeholderText().contains(QLocale().toString(60000)),
             qPrintable(edit->placeholderText()));
    QCOMPARE(w.form()->spec().dataset_size, std::int64_t(0));  // still "the task's default"
    // It follows the task.
    w.form()->setFieldText(QStringLiteral("task"), QStringLiteral("seed"));
    QVERIFY2(edit->placeholderText().contains(QLocale().toString(900)),
             qPrintable(edit->placeholderText()));
    // A size typed in is kept as typed.
    w.form()->setFieldText(QStringLiteral("dataset_size"), QStringLiteral("2000"));
    QCOMPARE(edit->text(), QStringLiteral("2000"));
    QCOMPARE(w.form()->spec().dataset_size, std::int64_t(2000));
  }

  void idleProgressSaysNoRunUntilARunHasSteps() {
    MainWindow w;
    w.refreshNow();
    QProgressBar* bar = w.controls()->progressBar();
    QCOMPARE(bar->text(), QStringLiteral("no run"));
    QVERIFY(!bar->text().contains(QLatin1String("step")));

    w.controller()->setWorkerProgram(fakeWorker());
    w.controller()->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", "6"}}));
    w.form()->setSpec(fakeSpec(2));
    w.setCloseQuestion([] { return true; });
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.startAction()->trigger();
    // No rank has said anything yet (the event loop has not run): the bar says so in words.
    w.refreshNow();
    QCOMPARE(bar->text(), QStringLiteral("starting…"));
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(w.controller()->state()), kTimeout);
    QCOMPARE(w.controller()->state(), State::Finished);
    w.refreshNow();
    QVERIFY2(bar->text().startsWith(QLatin1String("step ")), qPrintable(bar->text()));
    QCOMPARE(bar->value(), bar->maximum());
  }

  // A 1024 x 768 laptop screen, less a panel: the whole window fits, every control reachable.
  void fitsASmallScreen() {
    MainWindow w;
    const QSize min = w.minimumSizeHint().expandedTo(w.minimumSize());
    QString wide;
    for (QWidget* c : w.findChildren<QWidget*>())
      if (c->minimumSizeHint().width() > 300 || c->minimumWidth() > 300)
        wide += QStringLiteral("\n  %1 %2: hint %3, min %4")
                    .arg(QString::fromLatin1(c->metaObject()->className()), c->objectName())
                    .arg(c->minimumSizeHint().width())
                    .arg(c->minimumWidth());
    QVERIFY2(min.width() <= 1024 && min.height() <= 700,
             qPrintable(QStringLiteral("minimum %1 x %2; wide parts:%3")
                            .arg(min.width())
                            .arg(min.height())
                            .arg(wide)));
    // Nor once a run is shown: however long its name (the label above the charts shows it), the
    // charts' side asks for no more width than with a one-letter name.
    MetricsStore store;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.charts()->setSources({{QStringLiteral("a"), &store}}, true);
    QCoreApplication::processEvents();
    const int shortName = w.charts()->minimumSizeHint().width();
    w.charts()->setSources(
        {{QStringLiteral("20261206-091133-") + QString(120, QLatin1Char('x')), &store}}, true);
    QCoreApplication::processEvents();
    const int longName = w.charts()->minimumSizeHint().width();
    w.charts()->setSources({}, true);  // before `store` goes
    QCOMPARE(longName, shortName);
    const QSize shown = w.minimumSizeHint().expandedTo(w.minimumSize());
    QVERIFY2(shown.width() <= 1024,
             qPrintable(QStringLiteral("minimum width %1 with a run shown").arg(shown.width())));
    // And the app sizes it to the screen it opens on (here the offscreen platform's 800 x 600).
    const QRect avail = w.screen()->availableGeometry();
    QVERIFY(w.width() > avail.width() || w.height() > avail.height());  // its preferred size
    fitToScreen(&w);
    QVERIFY2(w.height() <= avail.height() && w.width() <= std::max(avail.width(), min.width()),
             qPrintable(QStringLiteral("%1 x %2 on a screen of %3 x %4")
                            .arg(w.width())
                            .arg(w.height())
                            .arg(avail.width())
                            .arg(avail.height())));
  }
};

DDPDESK_TEST_MAIN(TestFirstLaunch)
#include "test_first_launch.moc"

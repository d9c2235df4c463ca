// File → Follow run… with real ranks started by the test (torchrun's variables, --run-dir, no
// monitor socket): the window follows their metrics files, and the loss chart's per-rank curves
// and the rank table fill as for a run it started.
#include <QAction>
#include <QApplication>
#include <QMenuBar>
#include <QTemporaryDir>
#include <QtTest>

#include "charts/charts_panel.h"
#include "charts/loss_chart.h"
#include "exit_record.h"
#include "followed_run_checks.h"
#include "form/run_spec_form.h"
#include "hand_started_run.h"
#include "live/rank_table.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "run/run_directory.h"
#include "window/main_window.h"
#include "window/run_lifecycle.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {
constexpr int kTimeout = 180000;  // small shared CI machines: never a timing test
}

class TestFollowRun : public QObject {
  Q_OBJECT
  QTemporaryDir home;

 private Q_SLOTS:
  void initTestCase() { useTemporaryHome(home); }

  void theFileMenuOffersIt() {
    MainWindow w;
    bool found = false;
    for (QAction* menu : w.menuBar()->actions())
      if (menu->menu())
        for (QAction* a : menu->menu()->actions())
          if (a->text() == QStringLiteral("Follow run…")) found = true;
    QVERIFY(found);
  }

  void chartsAndRankTableFillFromAHandStartedRun() {
    QTemporaryDir dir;
    MainWindow w;
    QStringList errors;
    w.setErrorSink([&](const QString& e) { errors << e; });
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.followRun(dir.path()));
    QVERIFY(errors.isEmpty());
    QVERIFY(w.controller()->isAttached());
    HandStartedRun run(QStringLiteral(DDPDESK_REAL_WORKER), dir.path(), 2,
                       {"--task", "seed", "--dataset-size", "400", "--epochs", "1"});
    verifyFollowedToItsEnd(w, run.pids(), kTimeout);
    if (QTest::currentTestFailed()) return;
    // Following a second run: the first one's curves go.
    QVERIFY(w.followRun(dir.path()));
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(w.controller()->state()), kTimeout);
    QCOMPARE(int(w.controller()->store()->global().size()), 50);
  }

  // While a run is followed, the (disabled) form shows that run's spec, not the person's draft;
  // the draft is what the window remembers (and what comes back when the run ends).
  void theFormShowsTheFollowedRunsSpecNotTheDraft() {
    QTemporaryDir dir;
    RunSpec followed;
    followed.task = "fmnist-cnn";
    followed.batch_size = 77;
    followed.nproc = 3;
    {
      RunDirectory d;
      QVERIFY(d.open(dir.path()));
      QVERIFY(d.writeSpec(followed));
    }
    MainWindow w;
    RunSpec draft;
    draft.task = "fmnist-mlp";
    draft.batch_size = 12;
    w.form()->setSpec(draft);
    QVERIFY(w.followRun(dir.path()));
    QCOMPARE(w.form()->spec().batch_size, 77);
    QCOMPARE(w.form()->spec().task, std::string("fmnist-cnn"));
    QCOMPARE(w.lifecycle()->draftSpec().batch_size, 12);
  }
};

DDPDESK_TEST_MAIN(TestFollowRun)
#include "test_follow_run.moc"

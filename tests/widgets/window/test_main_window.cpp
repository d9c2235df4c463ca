// The window as a whole, driving the real RunController with the fake worker: Start and Stop
// (actions and shortcuts), live curves and rank table, failure shown prominently, history open
// and resume, closing during a run asks (and a confirmed close stops the run gracefully), the
// last spec remembered, the launch command copied.
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "charts/charts_panel.h"
#include "charts/loss_chart.h"
#include "form/launch_command.h"
#include "form/run_spec_form.h"
#include "hang/stack_collector.h"
#include "history/history_panel.h"
#include "live/hang_banner.h"
#include "live/log_view.h"
#include "live/rank_table.h"
#include "live/run_status_strip.h"
#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_directory.h"
#include "window/main_window.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {
constexpr int kTimeout = 60000;  // small shared CI machines: never a timing test
}

class TestMainWindow : public QObject {
  Q_OBJECT
  QTemporaryDir home;
  std::unique_ptr<MainWindow> w;
  QStringList errors;

  void make(std::initializer_list<std::pair<const char*, QString>> env, int nproc = 2) {
    w = std::make_unique<MainWindow>();
    w->controller()->setWorkerProgram(fakeWorker());
    w->controller()->setGracePeriod(20000);
    w->controller()->setExtraEnvironment(fakeEnv(env));
    w->setErrorSink([this](const QString& e) { errors << e; });
    w->form()->setSpec(fakeSpec(nproc));
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    QApplication::setActiveWindow(w.get());
  }
  bool waitForSteps(int n) {
    for (int i = 0; i < kTimeout / 20; ++i) {
      if (w->controller()->state() == State::Running &&
          int(w->controller()->store()->global().size()) >= n)
        return true;
      QTest::qWait(20);
    }
    return false;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(home.isValid());
    useScratchHome(home);
  }
  void cleanup() {
    if (w) w->setCloseQuestion([] { return true; });
    w.reset();  // a run still active is killed and reaped by the controller
    errors.clear();
  }

  void startIsDisabledWhileTheFormIsInvalid() {
    make({});
    QVERIFY(w->startAction()->isEnabled());
    QVERIFY(!w->stopAction()->isEnabled());
    auto* batch = qobject_cast<QLineEdit*>(w->form()->editor("batch_size"));
    batch->setText("0");
    QVERIFY(!w->startAction()->isEnabled());
    QVERIFY(w->form()->errorLabel("batch_size")->isVisible());
    QVERIFY(!w->startRun());
    QCOMPARE(w->controller()->state(), State::Idle);
    batch->setText("4");
    QVERIFY(w->startAction()->isEnabled());
  }

  void startAndStopDriveTheController() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QTest::keySequence(w.get(), QKeySequence(QStringLiteral("Ctrl+R")));
    QVERIFY2(errors.isEmpty(), qPrintable(errors.join('\n')));
    QVERIFY(w->controller()->isActive());
    QVERIFY(!w->startAction()->isEnabled());
    QVERIFY(w->stopAction()->isEnabled());
    QVERIFY(!w->form()->isEnabled());  // the spec of a running run does not change
    QVERIFY(waitForSteps(20));

    // The charts follow the live store; the table and the log show both ranks.
    QCOMPARE(w->charts()->sources().size(), std::size_t(1));
    QCOMPARE(w->charts()->sources().front().store, w->controller()->store());
    QTRY_VERIFY_WITH_TIMEOUT(w->charts()->lossChart()->curve("rank 1") &&
                                 w->charts()->lossChart()->curve("rank 1")->size() >= 20,
                             kTimeout);
    w->refreshNow();
    const auto& rows = w->rankModel()->rows();
    QCOMPARE(rows.size(), std::size_t(2));
    QCOMPARE(rows[1].pid, w->controller()->pids().at(1));
    QCOMPARE(rows[0].state, QStringLiteral("running"));
    QVERIFY(rows[0].step > 0);
    QTRY_VERIFY_WITH_TIMEOUT(w->logView()->visibleText().contains("[rank 1] fake-worker rank 1"),
                             kTimeout);
    QVERIFY(w->controls()->stateText().contains("Running"));
    QVERIFY(w->controls()->elapsedText().startsWith("elapsed"));
    QCOMPARE(w->controls()->progressBar()->maximum(), 100000);
    QVERIFY(w->controls()->progressBar()->value() > 0);

    QTest::keySequence(w.get(), QKeySequence(QStringLiteral("Ctrl+.")));
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Stopped, kTimeout);
    QVERIFY(allGone(w->controller()->pids()));
    QVERIFY(w->startAction()->isEnabled());
    QVERIFY(w->form()->isEnabled());
    const auto status = RunDirectory::readStatus(w->controller()->runDirectory());
    QVERIFY(status && status->state == "Stopped");
    QVERIFY(!w->logView()->failureShown());
  }

  void stacksButtonTakesEveryRanksStackAndOpensTheFile() {
    if (StackCollector::nativeTool().isEmpty())
      QSKIP("neither gdb nor eu-stack is installed (scripts/install-deps.sh --tests)");
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QStringList opened;
    w->hangBanner()->setOpener([&](const QString& p) { opened << p; });
    QVERIFY(!w->stacksAction()->isEnabled());  // no run
    QVERIFY(w->startRun());
    QVERIFY(waitForSteps(5));
    QVERIFY(w->stacksAction()->isEnabled());
    QSignalSpy taken(w->controller(), &RunController::stacksTaken);
    w->stacksAction()->trigger();
    QVERIFY(!w->stacksAction()->isEnabled());  // one collection at a time
    QTRY_VERIFY_WITH_TIMEOUT(taken.count() == 1, kTimeout);
    const QString path = taken.at(0).at(2).toString();
    QVERIFY(QFileInfo::exists(path));
    QCOMPARE(opened, QStringList{path});
    QVERIFY(w->hangBanner()->isVisible());
    QVERIFY2(w->hangBanner()->text().startsWith(QLatin1String("<b>Stacks:</b> ")),
             qPrintable(w->hangBanner()->text()));
    // The Log tab shows new lines on its own timer: wait for them.
    QTRY_VERIFY_WITH_TIMEOUT(w->logView()->visibleText().contains(QLatin1String("hang doctor: ")),
                             kTimeout);
    QVERIFY(w->stacksAction()->isEnabled());
    QCOMPARE(w->controller()->state(), State::Running);  // the run goes on
    const int before = int(w->controller()->store()->global().size());
    QVERIFY(waitForSteps(before + 5));
    w->stopRun();
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Stopped, kTimeout);
    QVERIFY(!w->stacksAction()->isEnabled());
  }

  void failureIsShownProminently() {
    make({{"FAKE_STEPS", "1000"},
          {"FAKE_CRASH_STEP", "5"},
          {"FAKE_CRASH_RANK", "1"},
          {"FAKE_CRASH_CODE", "3"}});
    QVERIFY(w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Failed, kTimeout);
    LogView* log = w->logView();
    QVERIFY(log->failureShown());
    QVERIFY2(log->failureText().contains("rank 1 exited with code 3"),
             qPrintable(log->failureText()));
    QVERIFY(log->failureText().contains("simulated failure at step 5"));
    QCOMPARE(w->tabs()->currentWidget(), log);
    QCOMPARE(log->filter(), 1);
    w->refreshNow();
    QCOMPARE(w->rankModel()->rows()[1].exitCode, QStringLiteral("3"));
    QVERIFY(w->rankModel()->rows()[1].failed);
    // The next start clears the banner.
    w->controller()->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", "5"}}));
    QVERIFY(w->startRun());
    QVERIFY(!log->failureShown());
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Finished, kTimeout);
  }

  void historyOpenOverlayAndResume() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QVERIFY(w->startRun());
    QVERIFY(waitForSteps(10));
    const QString first = w->controller()->runDirectory();
    w->stopRun();
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Stopped, kTimeout);
    const qint64 stoppedAt = w->controller()->store()->progress().step;
    // The status line says where to go on from.
    const QString said = w->statusBar()->currentMessage();
    QVERIFY2(said.startsWith(QLatin1String("Run stopped: stopped by the user")) &&
                 said.contains(QLatin1String("checkpoint step-")) &&
                 said.contains(QLatin1String("Resume it from the History tab")),
             qPrintable(said));

    w->controller()->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", "30"}}));
    QVERIFY(w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Finished, kTimeout);
    const QString second = w->controller()->runDirectory();

    // Both are in the history; open one, then overlay both.
    HistoryPanel* h = w->history();
    QVERIFY(h->model()->rowOf(first) >= 0);
    QVERIFY(h->model()->rowOf(second) >= 0);
    w->openRuns({first});
    // Once the file is read, on a worker thread: on a loaded machine that can take a while.
    QTRY_VERIFY_WITH_TIMEOUT(!w->charts()->showingLive(), kTimeout);
    QCOMPARE(w->charts()->sources().size(), std::size_t(1));
    QVERIFY(w->charts()->sources().front().store != w->controller()->store());
    QCOMPARE(qint64(w->charts()->sources().front().store->global().size()), stoppedAt);
    w->openRuns({first, second});
    // Each run's global loss; validation points only for the one that reached an epoch's end.
    const QString a = QFileInfo(first).fileName(), b = QFileInfo(second).fileName();
    QTRY_COMPARE_WITH_TIMEOUT(w->charts()->lossChart()->curveNames(),
                              (QStringList{a, b, b + " (val.)"}), kTimeout);
    w->showLiveRun();
    QVERIFY(w->charts()->showingLive());

    // Resume the stopped one: it continues in its own directory from its checkpoint, to a total
    // counted from where it stopped. The stop lands wherever the ranks were when they got it:
    // on a loaded machine that can be well past step 10, past any fixed total (30, say).
    const qint64 total = stoppedAt + 20;
    w->controller()->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", QString::number(total)}}));
    QVERIFY(w->resumeRun(first));
    // Started once the worker's dry run has loaded the checkpoint.
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->runDirectory(), QDir(first).absolutePath(),
                              kTimeout);
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Finished, kTimeout);
    const GlobalSeries& g = w->controller()->store()->global();
    QCOMPARE(g.step.back(), double(total));
    QCOMPARE(g.step.front(), 1.0);  // the first session's points were loaded back
  }

  void closingDuringARunAsks() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    int asked = 0;
    bool answer = false;
    w->setCloseQuestion([&] {
      ++asked;
      return answer;
    });
    QVERIFY(w->startRun());
    QVERIFY(waitForSteps(5));
    QVERIFY(!w->close());  // "Cancel": the window and the run stay
    QCOMPARE(asked, 1);
    QVERIFY(w->isVisible());
    QVERIFY(w->controller()->isActive());
    QVERIFY(!w->controller()->stopRequested());

    answer = true;
    QVERIFY(!w->close());  // confirmed: a graceful stop first, the window closes after it
    QCOMPARE(asked, 2);
    QVERIFY(w->controller()->stopRequested());
    QTRY_VERIFY_WITH_TIMEOUT(!w->isVisible(), kTimeout);
    QCOMPARE(w->controller()->state(), State::Stopped);  // graceful: checkpoint, exit 0
    QVERIFY(allGone(w->controller()->pids()));
  }

  void closingWhenIdleDoesNotAsk() {
    make({});
    int asked = 0;
    w->setCloseQuestion([&] {
      ++asked;
      return false;
    });
    QVERIFY(w->close());
    QCOMPARE(asked, 0);
  }

  void lastSpecIsRemembered() {
    make({{"FAKE_STEPS", "3"}});
    RunSpec s = fakeSpec(3);
    s.batch_size = 7;
    s.lr = 0.02;
    s.name = "remember-me";
    w->form()->setSpec(s);
    QVERIFY(w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Finished, kTimeout);
    w.reset();
    MainWindow again;
    QCOMPARE(again.form()->spec().batch_size, 7);
    QCOMPARE(again.form()->spec().nproc, 3);
    QCOMPARE(again.form()->spec().name, std::string("remember-me"));
    QCOMPARE(again.form()->spec().lr, 0.02);
  }

  void copiesTheLaunchCommand() {
    make({});
    w->copyTorchrunCommand();
    QCOMPARE(QApplication::clipboard()->text(), torchrunCommand(w->form()->spec()));
    w->copySrunCommand();
    QCOMPARE(QApplication::clipboard()->text(), srunCommand(w->form()->spec()));

    // A field that does not parse: no command, and the clipboard keeps what it had.
    auto* box = w->findChild<QPlainTextEdit*>(QStringLiteral("launchCommand"));
    QVERIFY(box);
    QVERIFY(box->toPlainText().startsWith(QLatin1String("torchrun")));
    QApplication::clipboard()->setText(QStringLiteral("kept"));
    w->form()->setFieldText(QStringLiteral("lr"), QStringLiteral("abc"));
    QVERIFY(!w->form()->isValid());
    QCOMPARE(box->toPlainText(), QString());
    w->copyTorchrunCommand();
    QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("kept"));
    w->form()->setFieldText(QStringLiteral("lr"), QStringLiteral("0.01"));
    QVERIFY(box->toPlainText().contains(QLatin1String("--lr 0.01")));
  }

  void autostartWaitsForTheGpuProbe() {
    make({{"FAKE_STEPS", "3"}});
    RunSpec s = fakeSpec(1);
    s.device = "cuda";  // the fake worker ignores the device
    w->form()->setSpec(s);
    w->startRunWhenReady();
    QCOMPARE(w->controller()->state(), State::Idle);  // the probe has not answered
    QVERIFY(errors.isEmpty());
    ProbeResult gpus;
    gpus.status = ProbeResult::Status::Ok;
    gpus.cudaAvailable = true;
    gpus.deviceCount = 1;
    w->form()->setProbeResult(gpus);
    QVERIFY(w->controller()->isActive());
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Finished, kTimeout);
  }

  // A user task's Start waits for the worker's dry run (the fake's canned --check, run with the
  // controller's worker): disabled while pending or rejected, enabled once it passed.
  void startWaitsForTheTaskCheck() {
    make({{"FAKE_STEPS", "3"}});
    QTemporaryDir files;
    auto write = [&](const QString& name, const QByteArray& content) {
      QFile f(files.filePath(name));
      f.open(QIODevice::WriteOnly);
      f.write(content);
      return f.fileName().toStdString();
    };
    RunSpec s = fakeSpec(1);
    s.task = "script";
    s.model = write("bad.pt", "bad not a TorchScript file (fake)\n");
    s.train_data = write("train.safetensors", "fake\n");
    w->form()->setSpec(s);
    QVERIFY(!w->startAction()->isEnabled());  // pending
    QTRY_VERIFY_WITH_TIMEOUT(
        w->form()->errorLabel("model")->isVisible() && !w->form()->waitingOnly(), kTimeout);
    QCOMPARE(w->form()->errorLabel("model")->text(),
             QStringLiteral("not a TorchScript file (fake)"));
    QVERIFY(!w->startAction()->isEnabled());  // rejected

    s.model = write("model.pt", "fake\n");
    w->form()->setSpec(s);
    QVERIFY(!w->startAction()->isEnabled());  // pending again
    QTRY_VERIFY_WITH_TIMEOUT(w->startAction()->isEnabled(), kTimeout);
    QVERIFY(w->form()->taskCheckLabel()->isVisible());

    // --start waits for the check like it waits for the GPU probe.
    s.eval_data = write("eval.safetensors", "fake\n");
    w->form()->setSpec(s);
    w->startRunWhenReady();
    QCOMPARE(w->controller()->state(), State::Idle);
    QVERIFY(errors.isEmpty());
    // Started once the check passed (a three-step run may be over by the first look).
    QTRY_COMPARE_WITH_TIMEOUT(w->controller()->state(), State::Finished, kTimeout);
    QVERIFY2(errors.isEmpty(), qPrintable(errors.join('\n')));
  }

  void badWorkerIsReported() {
    make({});
    w->controller()->setWorkerProgram("/nonexistent/ddpdesk-worker");
    QVERIFY(!w->startRun());
    QCOMPARE(errors.size(), 1);
    QVERIFY(errors.first().contains("not found"));
    QVERIFY(w->startAction()->isEnabled());
  }
};

DDPDESK_TEST_MAIN(TestMainWindow)
#include "test_main_window.moc"

// RunLifecycle on its own, without a window: real RunSpecForm, LogView and HistoryPanel, the real
// RunController driving the fake worker. An invalid form is refused with the field named and
// nothing started; a start resets the log and marks the history's active run; a failure shows
// the failed rank's output and asks for the Log tab; a resume continues in the run's directory
// once the dry run has loaded its checkpoint, and one it rejects starts nothing;
// a second Stop kills; stopping to close says when the ranks are gone; a Slurm start shows the
// batch script first and submits only on Submit.
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <QPushButton>

#include "form/run_spec_form.h"
#include "form/slurm_preview_dialog.h"
#include "history/history_panel.h"
#include "live/log_view.h"
#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "window/run_lifecycle.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {
constexpr int kTimeout = 60000;  // small shared CI machines: never a timing test
}

class TestRunLifecycle : public QObject {
  Q_OBJECT
  QTemporaryDir home;
  std::unique_ptr<RunController> controller;
  std::unique_ptr<RunSpecForm> form;
  std::unique_ptr<LogView> log;
  std::unique_ptr<HistoryPanel> history;
  std::unique_ptr<RunLifecycle> flow;

  void make(std::initializer_list<std::pair<const char*, QString>> env) {
    controller = std::make_unique<RunController>();
    controller->setWorkerProgram(fakeWorker());
    controller->setExtraEnvironment(fakeEnv(env));
    form = std::make_unique<RunSpecForm>();
    form->setSpec(fakeSpec(2));
    log = std::make_unique<LogView>();
    history = std::make_unique<HistoryPanel>();
    flow = std::make_unique<RunLifecycle>(controller.get(), form.get(), log.get(), history.get());
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(home.isValid());
    useScratchHome(home);
  }
  void cleanup() {
    flow.reset();
    controller.reset();  // a run still active is killed and reaped
    history.reset();
    log.reset();
    form.reset();
  }

  void anInvalidFormIsRefused() {
    make({});
    qobject_cast<QLineEdit*>(form->editor("batch_size"))->setText("0");
    QSignalSpy errors(flow.get(), &RunLifecycle::error);
    QVERIFY(!flow->acceptForm());
    QVERIFY(!flow->startFromForm());
    QCOMPARE(errors.count(), 2);
    QVERIFY2(errors.at(0).at(0).toString().contains(QLatin1String("batch_size")),
             qPrintable(errors.at(0).at(0).toString()));
    QCOMPARE(controller->state(), State::Idle);
  }

  void aSlurmStartShowsItsScriptFirst() {
    make({});
    // A stand-in sbatch that refuses the job (the real Slurm runs in test_slurm_launcher).
    QTemporaryDir bin;
    QFile sbatch(bin.filePath("sbatch"));
    QVERIFY(sbatch.open(QIODevice::WriteOnly));
    sbatch.write(
        "#!/bin/sh\necho 'sbatch: error: invalid partition specified: nope' >&2\nexit 1\n");
    sbatch.close();
    sbatch.setPermissions(QFile::ReadOwner | QFile::ExeOwner);
    const QByteArray path = qgetenv("PATH");
    qputenv("PATH", bin.path().toUtf8() + ":" + path);
    RunSpec spec = fakeSpec(2);
    spec.launcher = "slurm";
    spec.slurm_partition = "nope";
    spec.run_dir = home.filePath("slurm-run").toStdString();
    form->setSpec(spec);
    QVERIFY(flow->startFromForm());
    QVERIFY(flow->slurmPreview());
    QVERIFY(flow->slurmPreview()->scriptText().contains("#SBATCH --partition=nope\n"));
    QCOMPARE(controller->state(), State::Idle);  // nothing submitted, nothing written
    QVERIFY(!QFileInfo::exists(home.filePath("slurm-run")));
    flow->slurmPreview()->submitButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Failed, kTimeout);
    qputenv("PATH", path);
    QVERIFY(controller->failure().rejected);
    QCOMPARE(controller->reason(),
             QStringLiteral("sbatch: error: invalid partition specified: nope"));
    QVERIFY(!QFileInfo::exists(home.filePath("slurm-run")));
  }

  void aFailureShowsTheFailedRanksLog() {
    make({{"FAKE_STEPS", "1000"},
          {"FAKE_CRASH_STEP", "3"},
          {"FAKE_CRASH_RANK", "1"},
          {"FAKE_CRASH_CODE", "3"}});
    QSignalSpy live(flow.get(), &RunLifecycle::liveRunShown);
    QSignalSpy failure(flow.get(), &RunLifecycle::failureShown);
    QSignalSpy messages(flow.get(), &RunLifecycle::message);
    QVERIFY(flow->startFromForm());
    QCOMPARE(live.count(), 1);
    QCOMPARE(history->model()->rowOf(controller->runDirectory()) >= 0, true);
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Failed, kTimeout);
    QCOMPARE(failure.count(), 1);
    QVERIFY(log->failureShown());
    QVERIFY2(log->failureText().contains(QLatin1String("rank 1 exited with code 3")),
             qPrintable(log->failureText()));
    QCOMPARE(log->filter(), 1);
    QVERIFY(messages.last().at(0).toString().startsWith(QLatin1String("Run failed: ")));
    // The next start clears the failure.
    controller->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", "5"}}));
    QVERIFY(flow->startFromForm());
    QVERIFY(!log->failureShown());
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Finished, kTimeout);
    QCOMPARE(failure.count(), 1);
  }

  void resumeContinuesInTheRunsDirectory() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QVERIFY(flow->startFromForm());
    const QString dir = controller->runDirectory();
    QTRY_VERIFY_WITH_TIMEOUT(
        controller->state() == State::Running && controller->store()->progress().step >= 3,
        kTimeout);
    flow->stop();
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Stopped, kTimeout);
    const qint64 total = controller->store()->progress().step + 5;
    controller->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", QString::number(total)}}));
    QSignalSpy live(flow.get(), &RunLifecycle::liveRunShown);
    QVERIFY(flow->resume(dir));
    QTRY_COMPARE_WITH_TIMEOUT(live.count(), 1, kTimeout);  // after the checkpoint's dry run
    QCOMPARE(controller->runDirectory(), dir);
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Finished, kTimeout);
    QCOMPARE(controller->store()->progress().step, total);
    // A directory without a spec is refused, in words.
    QSignalSpy errors(flow.get(), &RunLifecycle::error);
    QVERIFY(!flow->resume(home.filePath(QStringLiteral("nowhere"))));
    QCOMPARE(errors.count(), 1);
  }

  // Resume runs the worker's dry run on the checkpoint first, as headless and the queue do: a
  // torn one is one error naming --resume, and no rank starts or touches the run's directory.
  void aResumeTheDryRunRejectsStartsNothing() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QVERIFY(flow->startFromForm());
    const QString dir = controller->runDirectory();
    QTRY_VERIFY_WITH_TIMEOUT(
        controller->state() == State::Running && controller->store()->progress().step >= 3,
        kTimeout);
    flow->stop();
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Stopped, kTimeout);
    const QStringList checkpoints =
        QDir(dir + QStringLiteral("/checkpoints")).entryList(QDir::Files, QDir::Name);
    QVERIFY(!checkpoints.isEmpty());
    QFile torn(dir + QStringLiteral("/checkpoints/") + checkpoints.last());
    QVERIFY(torn.open(QIODevice::WriteOnly | QIODevice::Truncate));
    torn.write("st");
    torn.close();
    const QStringList before = QDir(dir).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot);
    const QDateTime statusTime = QFileInfo(dir + QStringLiteral("/spec.json")).lastModified();
    QSignalSpy errors(flow.get(), &RunLifecycle::error);
    QSignalSpy live(flow.get(), &RunLifecycle::liveRunShown);
    QVERIFY(flow->resume(dir));
    QVERIFY(flow->checkingResume());
    QTRY_COMPARE_WITH_TIMEOUT(errors.count(), 1, kTimeout);
    const QString error = errors.first().first().toString();
    QVERIFY2(error.startsWith(QLatin1String("Could not resume the run: invalid --resume '")) &&
                 error.endsWith(QLatin1String("': the run has no checkpoint")),
             qPrintable(error));
    QVERIFY(!flow->checkingResume());
    QCOMPARE(live.count(), 0);
    QCOMPARE(controller->state(), State::Stopped);  // still the stopped run: nothing started
    QCOMPARE(QDir(dir).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot), before);
    QCOMPARE(QFileInfo(dir + QStringLiteral("/spec.json")).lastModified(), statusTime);
  }

  void aSecondStopKills() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}, {"FAKE_HANG_RANK", "0"}});
    controller->setGracePeriod(60000);  // only the second Stop can end it soon
    QVERIFY(flow->startFromForm());
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Running, kTimeout);
    flow->stop();
    QCOMPARE(controller->state(), State::Stopping);
    flow->stop();
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(controller->state()), kTimeout);
    QVERIFY(allGone(controller->pids()));
  }

  void stoppingToCloseSaysWhenTheRanksAreGone() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QSignalSpy close(flow.get(), &RunLifecycle::closeWhenEnded);
    QVERIFY(flow->startFromForm());
    QTRY_VERIFY_WITH_TIMEOUT(controller->store()->progress().step >= 2, kTimeout);
    QVERIFY(!flow->stoppingToClose());
    flow->stopToClose();
    QVERIFY(flow->stoppingToClose());
    QCOMPARE(close.count(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(close.count(), 1, kTimeout);
    QCOMPARE(controller->state(), State::Stopped);  // graceful: every rank checkpointed and left
    QVERIFY(allGone(controller->pids()));
  }
};

DDPDESK_TEST_MAIN(TestRunLifecycle)
#include "test_run_lifecycle.moc"

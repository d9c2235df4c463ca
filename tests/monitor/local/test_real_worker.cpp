// RunController with the real ddpdesk-worker (world=2, seed task, CPU): a run finishes with every
// step of every rank in the store; a user stop checkpoints and a resume continues it; a rank
// killed from outside fails the run and takes its peer down. Only built with the engine.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <csignal>
#include <memory>

#include "exit_record.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_controller.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {
constexpr int kTimeout = 300000;  // LibTorch start-up and Gloo rendezvous on a loaded box
}

class TestRealWorker : public QObject {
  Q_OBJECT
  QTemporaryDir data;
  std::unique_ptr<RunController> c;

  RunSpec seedSpec(std::int64_t datasetSize, int epochs) {
    RunSpec s;
    s.task = "seed";
    s.device = "cpu";
    s.nproc = 2;
    s.batch_size = 4;
    s.accum_steps = 2;
    s.epochs = epochs;
    s.dataset_size = datasetSize;
    s.seed = 7;
    return s;
  }
  void make(int graceMs = 60000) {
    c = std::make_unique<RunController>();
    c->setWorkerProgram(QStringLiteral(DDPDESK_REAL_WORKER));
    c->setGracePeriod(graceMs);
  }
  QString failureText() const {
    return RunController::stateName(c->state()) + QStringLiteral(": ") + c->reason();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(data.isValid());
    qputenv("XDG_DATA_HOME", data.path().toUtf8());
  }
  void cleanup() { c.reset(); }

  void runFinishesWithEveryPoint() {
    make();
    QSignalSpy changed(c.get(), &RunController::stateChanged);
    QString error;
    QVERIFY2(c->start(seedSpec(200, 2), &error), qPrintable(error));
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(failureText()),
                              kTimeout);
    QVERIFY2(c->state() == State::Finished, qPrintable(failureText()));
    QVERIFY(allGone(c->pids()));
    QCOMPARE(changed.at(1).at(0).value<State>(), State::Running);

    const MetricsStore& s = *c->store();
    const RunProgress p = s.progress();
    QVERIFY(p.totalSteps > 0);
    QCOMPARE(p.step, p.totalSteps);
    for (int r = 0; r < 2; ++r) {
      QCOMPARE(qint64(s.rankSeries(r).size()), p.totalSteps);  // log_interval 1: every step
      QCOMPARE(s.rankInfo(r).lastEvent, QStringLiteral("finished"));
      QCOMPARE(s.rankInfo(r).pid, c->pids().at(r));
    }
    QCOMPARE(qint64(s.global().size()), p.totalSteps);
    for (double loss : s.global().loss) QVERIFY(std::isfinite(loss));
    QCOMPARE(int(s.evals().size()), 2);
    QCOMPARE(p.samples, 2 * 200);  // two epochs of the whole data set
    QCOMPARE(c->server()->counters().malformed, 0);

    const auto status = RunDirectory::readStatus(c->runDirectory());
    QCOMPARE(status->state, QStringLiteral("Finished"));
    QCOMPARE(status->exitCodes, (QList<int>{0, 0}));
    const auto record = RunDirectory::readRecord(c->runDirectory());
    QVERIFY(record && record->specValid);
    QVERIFY(!record->checkpoints.isEmpty());  // the engine checkpoints at the end
  }

  void stopThenResume() {
    make();
    QVERIFY(c->start(seedSpec(40000, 1)));
    QTRY_VERIFY_WITH_TIMEOUT(
        c->store()->progress().step >= 10 || RunController::isTerminal(c->state()), kTimeout);
    c->stop();
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(failureText()),
                              kTimeout);
    QVERIFY2(c->state() == State::Stopped, qPrintable(failureText()));
    QVERIFY(allGone(c->pids()));
    for (const auto& r : c->ranks()) QCOMPARE(r.exitCode, 0);
    const QString dir = c->runDirectory();
    const RunProgress stopped = c->store()->progress();
    QVERIFY(stopped.step < stopped.totalSteps);
    QVERIFY(QFile::exists(stopped.lastCheckpoint));

    RunSpec again = seedSpec(40000, 1);
    again.resume = dir.toStdString();
    QVERIFY(c->start(again));
    QCOMPARE(c->runDirectory(), dir);
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(failureText()),
                              kTimeout);
    QVERIFY2(c->state() == State::Finished, qPrintable(failureText()));
    QVERIFY(allGone(c->pids()));
    const RunProgress done = c->store()->progress();
    QCOMPARE(done.step, done.totalSteps);
    // The store holds the history and the continuation: every step once, since the engine's
    // ranks agree on the stop step and resume right after it.
    QCOMPARE(qint64(c->store()->global().size()), done.totalSteps);
    bool resumed = false;
    for (const auto& e : c->store()->events())
      resumed |= e.event == "started" && e.detail.rfind("resumed from", 0) == 0;
    QVERIFY(resumed);
  }

  void rankKilledFromOutsideFailsTheRun() {
    make(3000);
    QVERIFY(c->start(seedSpec(400000, 1)));
    QTRY_VERIFY_WITH_TIMEOUT(c->store()->progress().step >= 5, kTimeout);
    const QList<qint64> pids = c->pids();
    ::kill(pid_t(pids.at(1)), SIGKILL);  // what the OOM killer would do
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c->state()), kTimeout);
    QCOMPARE(c->state(), State::Failed);
    QCOMPARE(c->failure().rank, 1);
    QCOMPARE(c->failure().signal, SIGKILL);
    QVERIFY2(c->reason().startsWith(QLatin1String("rank 1 was killed by signal 9 (SIGKILL)")),
             qPrintable(c->reason()));
    QVERIFY(allGone(pids));
    // The run directory says what happened: status.json names the killed rank, the survivor's
    // exit record says it failed because its peer vanished, monitor.log has both exits.
    const QString dir = c->runDirectory();
    const auto status = RunDirectory::readStatus(dir);
    QVERIFY(status);
    QCOMPARE(status->state, QStringLiteral("Failed"));
    QCOMPARE(status->termSignals.at(1), SIGKILL);
    QVERIFY(status->reason.startsWith(QLatin1String("rank 1 was killed by signal 9")));
    const auto survivor = read_exit_record(exit_record_path(dir.toStdString(), 0));
    QVERIFY(survivor);
    QCOMPARE(survivor->outcome, std::string("failed"));
    QVERIFY2(survivor->reason.find("rank 1") != std::string::npos, survivor->reason.c_str());
    QVERIFY(!read_exit_record(exit_record_path(dir.toStdString(), 1)));
    QFile log(RunDirectory::monitorLogPath(dir));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(log.readAll());
    QVERIFY2(text.contains(QStringLiteral("rank 1 (pid %1) was killed by signal 9").arg(pids[1])),
             qPrintable(text));
    QVERIFY(text.contains(QLatin1String("run Failed: rank 1 was killed")));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRealWorker)
#include "test_real_worker.moc"

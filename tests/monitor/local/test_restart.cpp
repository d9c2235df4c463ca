// Automatic restarts (spec max_restarts) with the real ddpdesk-worker (world 2, seed task, CPU): a
// rank killed mid-run restarts the run from its checkpoint and every step's last recorded loss is
// bitwise the uninterrupted run's; a second kill with one restart fails the run naming it; a kill
// before the first step, and a stop during the backoff, restart nothing.
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>

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

// Every step's last global loss in the record, as its bits (a restart records the steps after
// its checkpoint twice: the later one counts).
std::map<qint64, quint64> lastLossBits(const MetricsStore& store) {
  std::map<qint64, quint64> out;
  const GlobalSeries& g = store.global();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double loss = g.loss[i];
    quint64 bits = 0;
    std::memcpy(&bits, &loss, sizeof bits);
    out[qint64(g.step[i])] = bits;
  }
  return out;
}

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TestRestart : public QObject {
  Q_OBJECT
  QTemporaryDir home;
  std::unique_ptr<RunController> c;

  static RunSpec spec(int maxRestarts, double backoff) {
    RunSpec s;
    s.task = "seed";
    s.nproc = 2;
    s.batch_size = 4;
    s.accum_steps = 2;
    s.epochs = 2;  // 900 samples, 16 a step: 57 steps an epoch
    s.seed = 11;
    s.checkpoint_every = 5;
    s.max_restarts = maxRestarts;
    s.restart_backoff = backoff;
    return s;
  }
  // A run whose rank 0 loads each micro-batch 15 ms slower: long enough to be killed mid-run.
  void make(bool slow) {
    c = std::make_unique<RunController>();
    c->setWorkerProgram(QStringLiteral(DDPDESK_REAL_WORKER));
    c->setGracePeriod(20000);
    QProcessEnvironment env;
    if (slow) env.insert(QStringLiteral("DDPDESK_FAULT_SLOW_RANK"), QStringLiteral("0:15"));
    c->setExtraEnvironment(env);
  }
  QString text() const {
    return RunController::stateName(c->state()) + QStringLiteral(": ") + c->reason();
  }
  bool waitForStep(qint64 step) {
    return QTest::qWaitFor(
               [&] {
                 return c->store()->progress().step >= step ||
                        RunController::isTerminal(c->state());
               },
               kTimeout) &&
           !RunController::isTerminal(c->state());
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(home.isValid());
    useScratchHome(home);
  }
  void cleanup() { c.reset(); }

  void aKilledRankRestartsAndEveryStepMatchesAnUninterruptedRun() {
    make(false);
    QVERIFY(c->start(spec(0, 1)));
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(text()), kTimeout);
    QVERIFY2(c->state() == State::Finished, qPrintable(text()));
    const auto uninterrupted = lastLossBits(*c->store());
    const qint64 total = c->store()->progress().totalSteps;
    QCOMPARE(qint64(uninterrupted.size()), total);

    make(true);
    QSignalSpy restarting(c.get(), &RunController::restarting);
    QVERIFY(c->start(spec(1, 0.2)));
    QVERIFY2(waitForStep(12), qPrintable(text()));
    const QList<qint64> first = c->pids();
    QElapsedTimer sinceKill;
    sinceKill.start();
    ::kill(pid_t(first.at(1)), SIGKILL);
    QTRY_VERIFY_WITH_TIMEOUT(restarting.count() == 1, kTimeout);
    QCOMPARE(restarting.at(0).at(0).toInt(), 1);
    QCOMPARE(restarting.at(0).at(1).toInt(), 1);
    QVERIFY2(restarting.at(0).at(2).toString().startsWith(
                 QLatin1String("rank 1 was killed by signal 9 (SIGKILL)")),
             qPrintable(restarting.at(0).at(2).toString()));
    QVERIFY(allGone(first));  // the survivor was stopped before anything restarted
    // Training again: a step from the new ranks.
    const qint64 stepsBefore = c->store()->messageCount();
    QTRY_VERIFY_WITH_TIMEOUT(c->state() == State::Running || RunController::isTerminal(c->state()),
                             kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(
        c->store()->rankSeries(1).size() > 0 && c->store()->messageCount() > stepsBefore + 4,
        kTimeout);
    qInfo("from the kill to training again: %lld ms", qint64(sinceKill.elapsed()));
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(text()), kTimeout);
    QVERIFY2(c->state() == State::Finished, qPrintable(text()));
    QCOMPARE(c->restarts(), 1);
    QVERIFY(allGone(c->pids()));
    QVERIFY(c->pids().at(1) != first.at(1));

    // Bitwise the uninterrupted run's loss at every step.
    const auto restarted = lastLossBits(*c->store());
    QCOMPARE(qint64(restarted.size()), total);
    for (const auto& [step, bits] : uninterrupted)
      QVERIFY2(restarted.at(step) == bits, qPrintable(QStringLiteral("step %1").arg(step)));

    // Resumed from a checkpoint, not from the start; the record marks and counts the restart.
    bool resumed = false, marked = false;
    for (const auto& e : c->store()->events()) {
      resumed |= e.event == "started" && e.detail.rfind("resumed from", 0) == 0;
      marked |= e.event == "restart" && e.step >= 12 &&
                e.detail.rfind("rank 1 was killed by signal 9", 0) == 0;
    }
    QVERIFY(resumed);
    QVERIFY(marked);
    const QString dir = c->runDirectory();
    QCOMPARE(RunDirectory::readStatus(dir)->restarts, 1);
    QCOMPARE(RunDirectory::readStatus(dir)->state, QStringLiteral("Finished"));
    const QString log = readText(RunDirectory::monitorLogPath(dir));
    QVERIFY2(log.contains(QLatin1String("restart 1 of 1 in 0.2 s after step")), qPrintable(log));
    QVERIFY2(log.contains(QLatin1String("restarting 2 rank(s)")), qPrintable(log));
    // The record read back (the history, a comparison) has both sessions and the mark.
    MetricsStore reread;
    QVERIFY(reread.loadJsonl(RunDirectory::metricsPath(dir)).ok);
    QVERIFY(lastLossBits(reread) == restarted);
  }

  void aSecondKillWithOneRestartFailsNamingIt() {
    make(true);
    QSignalSpy restarting(c.get(), &RunController::restarting);
    QVERIFY(c->start(spec(1, 0.1)));
    QVERIFY2(waitForStep(6), qPrintable(text()));
    ::kill(pid_t(c->pids().at(1)), SIGKILL);
    QTRY_VERIFY_WITH_TIMEOUT(restarting.count() == 1, kTimeout);
    const qint64 killedAt = c->store()->progress().step;
    QTRY_VERIFY_WITH_TIMEOUT(c->state() == State::Running || RunController::isTerminal(c->state()),
                             kTimeout);
    // Training again past the checkpoint it resumed from, then rank 0 dies.
    const qint64 before = c->store()->messageCount();
    QTRY_VERIFY_WITH_TIMEOUT(
        c->store()->messageCount() > before + 6 || RunController::isTerminal(c->state()), kTimeout);
    QVERIFY2(c->isActive(), qPrintable(text()));
    ::kill(pid_t(c->pids().at(0)), SIGKILL);
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(text()), kTimeout);
    QCOMPARE(c->state(), State::Failed);
    QCOMPARE(restarting.count(), 1);
    QCOMPARE(c->restarts(), 1);
    QCOMPARE(c->failure().rank, 0);
    QVERIFY2(c->reason().startsWith(QLatin1String("rank 0 was killed by signal 9 (SIGKILL)")),
             qPrintable(c->reason()));
    QVERIFY2(c->reason()
                 .section(QLatin1Char('\n'), 0, 0)
                 .endsWith(QLatin1String("(after 1 restart, none left)")),
             qPrintable(c->reason()));
    QVERIFY(allGone(c->pids()));
    const auto status = RunDirectory::readStatus(c->runDirectory());
    QCOMPARE(status->state, QStringLiteral("Failed"));
    QCOMPARE(status->restarts, 1);
    QVERIFY(killedAt >= 6);
  }

  void aKillBeforeTheFirstStepDoesNotRestart() {
    make(true);
    QSignalSpy restarting(c.get(), &RunController::restarting);
    QSignalSpy started(c.get(), &RunController::rankStarted);
    QVERIFY(c->start(spec(3, 0.1)));
    QTRY_VERIFY_WITH_TIMEOUT(started.count() == 2, kTimeout);
    QVERIFY(c->store()->progress().step == 0);
    ::kill(pid_t(c->pids().at(1)), SIGKILL);
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(text()), kTimeout);
    QCOMPARE(c->state(), State::Failed);
    QCOMPARE(restarting.count(), 0);
    QCOMPARE(c->restarts(), 0);
    QVERIFY2(c->reason().contains(
                 QLatin1String("(no restart: the run failed before its first optimizer step)")),
             qPrintable(c->reason()));
    QVERIFY(allGone(c->pids()));
  }

  void aStopDuringTheBackoffEndsStopped() {
    make(true);
    QSignalSpy restarting(c.get(), &RunController::restarting);
    QVERIFY(c->start(spec(2, 60)));
    QVERIFY2(waitForStep(3), qPrintable(text()));
    const QList<qint64> pids = c->pids();
    ::kill(pid_t(pids.at(0)), SIGKILL);
    QTRY_VERIFY_WITH_TIMEOUT(restarting.count() == 1, kTimeout);
    QCOMPARE(restarting.at(0).at(3).toInt(), 60000);
    QCOMPARE(c->state(), State::Stopping);
    c->stop();
    QCOMPARE(c->state(), State::Stopped);  // nothing runs: it ends at once
    QVERIFY2(c->reason().startsWith(QLatin1String(
                 "stopped by the user while waiting to restart after: rank 0 was killed")),
             qPrintable(c->reason()));
    QCOMPARE(c->restarts(), 0);
    QVERIFY(allGone(pids));
    QCOMPARE(RunDirectory::readStatus(c->runDirectory())->state, QStringLiteral("Stopped"));
    QTest::qWait(300);
    QCOMPARE(c->state(), State::Stopped);  // and the timer did not start ranks after all
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRestart)
#include "test_restart.moc"

// RunController driving the fake worker: a normal run, a rank crashing, a rank hanging past the
// grace period, a user stop, a resume, and destroying the controller mid-run. After every
// scenario no process of the run may be left.
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>
#include <set>

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
constexpr int kRunTimeout = 60000;  // a loaded 2-core CI box can be very slow; never a timing test
}

class TestRunController : public QObject {
  Q_OBJECT
  QTemporaryDir data;
  std::unique_ptr<RunController> c;

  void make(std::initializer_list<std::pair<const char*, QString>> env, int graceMs = 20000) {
    c = std::make_unique<RunController>();
    c->setWorkerProgram(fakeWorker());
    c->setGracePeriod(graceMs);
    c->setExtraEnvironment(fakeEnv(env));
  }
  // The run's monitor.log, for the rows whose run directory must say what happened.
  QString monitorLog() const {
    QFile f(RunDirectory::monitorLogPath(c->runDirectory()));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
  }
  static QStringList states(const QSignalSpy& spy) {
    QStringList out;
    for (const auto& args : spy) out << RunController::stateName(args.at(0).value<State>());
    return out;
  }
  // Waits for a log line of `rank` containing `text` (the fake says what it is doing).
  static bool waitForLine(QSignalSpy& lines, int rank, const QString& text) {
    for (int i = 0; i < kRunTimeout / 20; ++i) {
      for (const auto& args : lines)
        if (args.at(0).toInt() == rank && args.at(2).toString().contains(text)) return true;
      QTest::qWait(20);
    }
    return false;
  }
  // Waits until every rank reported at least `n` steps (the run is really under way).
  bool waitForSteps(int n) {
    for (int i = 0; i < kRunTimeout / 20; ++i) {
      bool all = c->state() == State::Running;
      for (int r = 0; all && r < c->worldSize(); ++r)
        all = int(c->store()->rankSeries(r).size()) >= n;
      if (all) return true;
      QTest::qWait(20);
    }
    return false;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(data.isValid());
    qputenv("XDG_DATA_HOME", data.path().toUtf8());
  }
  void cleanup() { c.reset(); }

  void normalRunFinishes() {
    make({{"FAKE_STEPS", "30"}});
    QSignalSpy changed(c.get(), &RunController::stateChanged);
    QSignalSpy finished(c.get(), &RunController::finished);
    QSignalSpy lines(c.get(), &RunController::logLine);
    QString error;
    QVERIFY2(c->start(fakeSpec(2), &error), qPrintable(error));
    QCOMPARE(c->state(), State::Starting);
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Finished, kRunTimeout);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(states(changed), (QStringList{"Starting", "Running", "Finished"}));
    QVERIFY(allGone(c->pids()));
    QVERIFY(c->reason().isEmpty());

    // Every step of every rank reached the store.
    const MetricsStore& s = *c->store();
    for (int r = 0; r < 2; ++r) {
      QCOMPARE(int(s.rankSeries(r).size()), 30);
      QCOMPARE(s.rankSeries(r).step.back(), 30.0);
      QCOMPARE(s.rankInfo(r).lastEvent, QStringLiteral("finished"));
    }
    QCOMPARE(int(s.global().size()), 30);
    QCOMPARE(int(s.evals().size()), 2);  // two epochs
    QCOMPARE(s.progress().totalSteps, 30);
    QCOMPARE(s.progress().samples, 30 * 2 * 4 * 2);

    // The environment contract, as the worker saw it.
    QStringList out;
    for (const auto& args : lines)
      if (args.at(0).toInt() == 1 && !args.at(1).toBool()) out << args.at(2).toString();
    const QString env = out.filter(QStringLiteral("env ")).value(0);
    QVERIFY2(env.contains(QLatin1String("RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 "
                                        "MASTER_ADDR=127.0.0.1 MASTER_PORT=")),
             qPrintable(env));
    QVERIFY(env.contains(QLatin1String("OMP_NUM_THREADS=1")));

    // The run directory holds the record of it.
    const QString dir = c->runDirectory();
    QVERIFY(dir.startsWith(RunDirectory::runsRoot()));
    QVERIFY(QFile::exists(RunDirectory::specPath(dir)));
    QVERIFY(QFile::exists(RunDirectory::logPath(dir, 0)));
    QFile log(RunDirectory::logPath(dir, 1));
    QVERIFY(log.open(QIODevice::ReadOnly));
    QVERIFY(log.readAll().contains("fake-worker rank 1: step 30/30"));
    const auto status = RunDirectory::readStatus(dir);
    QVERIFY(status);
    QCOMPARE(status->state, QStringLiteral("Finished"));
    QCOMPARE(status->exitCodes, (QList<int>{0, 0}));
    QCOMPARE(status->lastStep, 30);
    MetricsStore loaded;
    const auto r = loaded.loadJsonl(RunDirectory::metricsPath(dir));
    QVERIFY(r.ok);
    QCOMPARE(r.malformed, 0);
    QCOMPARE(int(loaded.rankSeries(1).size()), 30);
    QCOMPARE(loaded.rankInfo(1).pid, c->pids().at(1));
    // The metrics socket and its directory are gone with the run.
    QVERIFY(c->socketPath().isEmpty());
  }

  void rankCrashFailsAndStopsTheOthers() {
    make({{"FAKE_STEPS", "100000"},
          {"FAKE_STEP_MS", "5"},
          {"FAKE_CRASH_STEP", "5"},
          {"FAKE_CRASH_RANK", "1"},
          {"FAKE_CRASH_CODE", "3"}});
    QSignalSpy failed(c.get(), &RunController::failed);
    QVERIFY(c->start(fakeSpec(3)));
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Failed, kRunTimeout);
    QVERIFY(allGone(c->pids()));
    QCOMPARE(failed.count(), 1);
    QCOMPARE(c->failure().rank, 1);
    QCOMPARE(c->failure().exitCode, 3);
    QCOMPARE(c->failure().errorMessage, QStringLiteral("simulated failure at step 5"));
    QVERIFY(c->failure().stderrTail.join('\n').contains(QLatin1String("simulated failure")));
    const QString reason = failed.at(0).at(0).toString();
    QVERIFY2(reason.startsWith(QLatin1String("rank 1 exited with code 3")), qPrintable(reason));
    QVERIFY(reason.contains(QLatin1String("last stderr lines of rank 1")));
    // The survivors were asked to stop (SIGTERM), not killed: they exit 0, or die of the SIGTERM
    // itself when it lands before their handler is installed (a slow start on a loaded box).
    for (const auto& r : c->ranks()) {
      QVERIFY(r.exited);
      if (r.rank != 1)
        QVERIFY2(r.exitCode == 0 || (r.crashed && r.signal == SIGTERM), qPrintable(r.exitText));
    }
    const auto status = RunDirectory::readStatus(c->runDirectory());
    QCOMPARE(status->state, QStringLiteral("Failed"));
    QCOMPARE(status->exitCodes.at(1), 3);
  }

  void rankAbortIsReportedBySignal() {
    make({{"FAKE_STEPS", "100000"},
          {"FAKE_STEP_MS", "5"},
          {"FAKE_CRASH_STEP", "3"},
          {"FAKE_CRASH_RANK", "0"},
          {"FAKE_CRASH_MODE", "abort"}});
    QVERIFY(c->start(fakeSpec(2)));
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Failed, kRunTimeout);
    QVERIFY(allGone(c->pids()));
    QCOMPARE(c->failure().rank, 0);
    QCOMPARE(c->failure().signal, SIGABRT);
    QVERIFY2(c->reason().contains(QLatin1String("rank 0 was killed by signal 6 (SIGABRT)")),
             qPrintable(c->reason()));
  }

  void hangingSurvivorIsKilledAfterGrace() {
    // Rank 0 hangs and ignores SIGTERM; once it does, rank 1 dies (as the OOM killer would do it).
    make({{"FAKE_STEPS", "100000"},
          {"FAKE_STEP_MS", "5"},
          {"FAKE_HANG_RANK", "0"},
          {"FAKE_HANG_STEP", "3"}},
         500);
    QSignalSpy lines(c.get(), &RunController::logLine);
    QVERIFY(c->start(fakeSpec(2)));
    QVERIFY(waitForLine(lines, 0, QStringLiteral("hanging")));
    QVERIFY(waitForSteps(1));
    ::kill(pid_t(c->pids().at(1)), SIGKILL);  // not by us: a failure
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Failed, kRunTimeout);
    QVERIFY(allGone(c->pids()));
    QCOMPARE(c->failure().rank, 1);  // the crash, not the kill we did
    QCOMPARE(c->failure().signal, SIGKILL);
    const auto ranks = c->ranks();
    QVERIFY(ranks[0].crashed);
    QCOMPARE(ranks[0].signal, SIGKILL);
  }

  void userStopIsGraceful() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QSignalSpy changed(c.get(), &RunController::stateChanged);
    QSignalSpy stopped(c.get(), &RunController::stopped);
    QVERIFY(c->start(fakeSpec(2)));
    QVERIFY(waitForSteps(3));
    c->stop();
    QCOMPARE(c->state(), State::Stopping);
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Stopped, kRunTimeout);
    QVERIFY(allGone(c->pids()));
    QCOMPARE(states(changed), (QStringList{"Starting", "Running", "Stopping", "Stopped"}));
    QCOMPARE(stopped.count(), 1);
    QVERIFY2(c->reason().startsWith(QLatin1String("stopped by the user at step")),
             qPrintable(c->reason()));
    for (const auto& r : c->ranks()) QCOMPARE(r.exitCode, 0);
    // Rank 0 checkpointed on the way out, and said so.
    QVERIFY(!c->store()->progress().lastCheckpoint.isEmpty());
    QVERIFY(QFile::exists(c->store()->progress().lastCheckpoint));
    QCOMPARE(RunDirectory::readStatus(c->runDirectory())->state, QStringLiteral("Stopped"));
  }

  void stopKillsRankIgnoringSigterm() {
    // Rank 1 hangs from its first step and ignores SIGTERM; rank 0 trains on. The grace period
    // is what rank 0 has to stop gracefully in (a step, a checkpoint: milliseconds), with room
    // for a loaded machine; rank 1 is killed when it ends.
    make({{"FAKE_STEPS", "100000"},
          {"FAKE_STEP_MS", "5"},
          {"FAKE_HANG_RANK", "1"},
          {"FAKE_HANG_STEP", "1"}},
         5000);
    QSignalSpy lines(c.get(), &RunController::logLine);
    QVERIFY(c->start(fakeSpec(2)));
    QVERIFY(waitForLine(lines, 1, QStringLiteral("hanging")));
    QTRY_VERIFY_WITH_TIMEOUT(c->store()->rankSeries(0).size() >= 2, kRunTimeout);
    c->stop();
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Stopped, kRunTimeout);
    QVERIFY(allGone(c->pids()));
    const auto ranks = c->ranks();
    QCOMPARE(ranks[0].exitCode, 0);
    QVERIFY(ranks[1].crashed);
    QCOMPARE(ranks[1].signal, SIGKILL);
    QVERIFY2(c->reason().contains(QLatin1String("rank(s) 1 had to be killed")),
             qPrintable(c->reason()));
  }

  void killStopsAtOnce() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QVERIFY(c->start(fakeSpec(2)));
    QVERIFY(waitForSteps(1));
    c->kill();
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Stopped, kRunTimeout);
    QVERIFY(allGone(c->pids()));
  }

  void destroyingTheControllerEndsTheRun() {
    make({{"FAKE_STEPS", "100000"},
          {"FAKE_STEP_MS", "5"},
          {"FAKE_HANG_RANK", "1"},
          {"FAKE_HANG_STEP", "5"}});
    QVERIFY(c->start(fakeSpec(3)));
    QVERIFY(waitForSteps(1));
    const QList<qint64> pids = c->pids();
    const QString dir = c->runDirectory();
    QVERIFY(!allGone(pids));
    c.reset();
    QVERIFY(allGone(pids));  // synchronously: killed and reaped by the destructor
    const auto status = RunDirectory::readStatus(dir);
    QVERIFY(status);
    QCOMPARE(status->state, QStringLiteral("Failed"));
  }

  void resumeContinuesInTheSameDirectory_data() {
    QTest::addColumn<qint64>("asyncLoadBytes");
    QTest::newRow("history loaded before the ranks start") << (qint64(1) << 30);
    QTest::newRow("history loaded on a worker thread") << qint64(0);
  }
  void resumeContinuesInTheSameDirectory() {
    QFETCH(qint64, asyncLoadBytes);
    // 400 steps of 100 ms: 40 s, far longer than the stop takes to arrive after step 5 however
    // loaded the machine; the resumed run's steps are quick.
    make({{"FAKE_STEPS", "400"}, {"FAKE_STEP_MS", "100"}});
    QVERIFY(c->start(fakeSpec(2)));
    QVERIFY(waitForSteps(5));
    c->stop();
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Stopped, kRunTimeout);
    const QString dir = c->runDirectory();
    const qint64 stoppedAt = c->store()->progress().step;
    QVERIFY(stoppedAt > 0 && stoppedAt < 400);

    RunSpec again = fakeSpec(2);
    again.resume = dir.toStdString();
    c->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", "400"}, {"FAKE_STEP_MS", "2"}}));
    c->setAsyncLoadThreshold(asyncLoadBytes);
    QVERIFY(c->start(again));
    QCOMPARE(c->store()->isLoading(), asyncLoadBytes == 0);
    QCOMPARE(c->runDirectory(), dir);
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Finished, kRunTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!c->store()->isLoading(), kRunTimeout);
    QVERIFY(allGone(c->pids()));
    QCOMPARE(c->store()->rankCount(), 2);
    // History first, then the continuation from the checkpoint. The fake's ranks stop on their
    // own steps (the real worker agrees on one), so the continuation may overlap the history
    // by a few steps; together they cover every step.
    const GlobalSeries& g = c->store()->global();
    QCOMPARE(g.step.front(), 1.0);
    QCOMPARE(g.step.back(), 400.0);
    QCOMPARE(int(std::set<double>(g.step.begin(), g.step.end()).size()), 400);
    QVERIFY(g.step[std::size_t(stoppedAt) - 1] == double(stoppedAt));
    QCOMPARE(RunDirectory::readStatus(dir)->state, QStringLiteral("Finished"));
  }

  void wrongTokenIsRefusedButRunCompletes() {
    make({{"FAKE_STEPS", "10"}, {"FAKE_TOKEN", "forged"}, {"FAKE_RANKS", "1"}});
    QSignalSpy warnings(c.get(), &RunController::warning);
    QVERIFY(c->start(fakeSpec(2)));
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c->state()), kRunTimeout);
    QCOMPARE(c->state(), State::Finished);
    QVERIFY(allGone(c->pids()));
    QCOMPARE(int(c->store()->rankSeries(0).size()), 10);
    QCOMPARE(int(c->store()->rankSeries(1).size()), 0);  // nothing it said was believed
    bool refused = false;
    for (const auto& w : warnings) refused |= w.at(0).toString().contains(QLatin1String("token"));
    QVERIFY(refused);
    // The run directory keeps it: status.json counts it, monitor.log says which and why.
    const auto status = RunDirectory::readStatus(c->runDirectory());
    QVERIFY(status);
    QCOMPARE(status->state, QStringLiteral("Finished"));
    QCOMPARE(status->droppedConnections, 1);
    const QString log = monitorLog();
    QVERIFY2(log.contains(QLatin1String("warning: refused a metrics connection")) &&
                 log.contains(QLatin1String("token")),
             qPrintable(log));
    QVERIFY(log.contains(QLatin1String("run Finished")));
  }

  // A metrics.jsonl that a killed monitor left in half a line: the new run's first message is a
  // line of its own, and status.json counts the half line as malformed.
  void halfLineLeftByAKilledMonitorIsEndedAndCounted() {
    const QString dir = data.filePath(QStringLiteral("half-line"));
    QVERIFY(QDir().mkpath(dir));
    QFile f(RunDirectory::metricsPath(dir));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"type\":\"step\",\"rank\":0,\"ste");
    f.close();
    make({{"FAKE_STEPS", "5"}});
    QVERIFY(c->start(fakeSpec(1, dir)));
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Finished, kRunTimeout);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().split('\n');
    QCOMPARE(lines.front(), QByteArray("{\"type\":\"step\",\"rank\":0,\"ste"));
    QVERIFY2(lines.at(1).contains("\"type\":\"hello\""), lines.at(1).constData());
    QCOMPARE(RunDirectory::readStatus(dir)->malformedLines, 1);
  }

  void garbageAndOversizedLinesDoNotDisturbTheRun() {
    make({{"FAKE_STEPS", "20"}, {"FAKE_GARBAGE", "1"}});
    QVERIFY(c->start(fakeSpec(2)));
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Finished, kRunTimeout);
    QCOMPARE(int(c->store()->rankSeries(0).size()), 20);
    QCOMPARE(int(c->store()->rankSeries(1).size()), 20);
    QVERIFY(allGone(c->pids()));
    QCOMPARE(RunDirectory::readStatus(c->runDirectory())->malformedLines, 2 * 2 * 20);
    QVERIFY(monitorLog().contains(QLatin1String("malformed line(s)")));

    make({{"FAKE_STEPS", "20"}, {"FAKE_OVERSIZE_STEP", "3"}, {"FAKE_RANKS", "1"}});
    QSignalSpy warnings(c.get(), &RunController::warning);
    QVERIFY(c->start(fakeSpec(2)));
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Finished, kRunTimeout);
    QVERIFY(allGone(c->pids()));
    QCOMPARE(int(c->store()->rankSeries(0).size()), 20);
    QVERIFY(c->store()->rankSeries(1).size() >= 3);  // up to the oversized line
    QVERIFY(c->store()->rankSeries(1).size() < 20);
    QCOMPARE(RunDirectory::readStatus(c->runDirectory())->droppedConnections, 1);
    QVERIFY2(monitorLog().contains(QLatin1String("dropped rank 1's metrics connection")),
             qPrintable(monitorLog()));
  }

  // A newer worker (an unknown message type and an unknown field with every step) runs as any
  // other: status.json counts what was ignored next to the malformed lines, monitor.log names it
  // once per rank, and metrics.jsonl keeps the unknown lines for a later version.
  void newerWorkerInputIsCountedNotMalformed() {
    make({{"FAKE_STEPS", "10"}, {"FAKE_NEWER", "1"}});
    QVERIFY(c->start(fakeSpec(2)));
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Finished, kRunTimeout);
    QCOMPARE(int(c->store()->rankSeries(0).size()), 10);
    QCOMPARE(int(c->store()->rankSeries(1).size()), 10);
    const auto status = RunDirectory::readStatus(c->runDirectory());
    QVERIFY(status);
    QCOMPARE(status->malformedLines, 0);
    QCOMPARE(status->ignoredLines, 2 * 10);
    QCOMPARE(status->unknownFields, 2 * 10);
    const QString log = monitorLog();
    QCOMPARE(log.count(QLatin1String("unknown type 'histogram'")), 2);
    QCOMPARE(log.count(QLatin1String("unknown field 'h2d_ms' in step")), 2);
    QVERIFY(!log.contains(QLatin1String("warning")));
    QFile metrics(RunDirectory::metricsPath(c->runDirectory()));
    QVERIFY(metrics.open(QIODevice::ReadOnly));
    QCOMPARE(metrics.readAll().count("\"type\":\"histogram\""), 2 * 10);
  }

  // A rank that speaks only other wire versions is refused, named, and the run goes on.
  void incompatibleWireVersionIsRefused() {
    make({{"FAKE_STEPS", "10"}, {"FAKE_WIRE_RANGE", "7,9"}, {"FAKE_RANKS", "1"}});
    QVERIFY(c->start(fakeSpec(2)));
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c->state()), kRunTimeout);
    QCOMPARE(int(c->store()->rankSeries(0).size()), 10);
    QCOMPARE(int(c->store()->rankSeries(1).size()), 0);
    QCOMPARE(RunDirectory::readStatus(c->runDirectory())->droppedConnections, 1);
    const QString log = monitorLog();
    QVERIFY2(log.contains(QStringLiteral("rank 1 speaks wire versions 7..9; this monitor reads "
                                         "%1..%2")
                              .arg(wire::kMinVersion)
                              .arg(wire::kMaxVersion)),
             qPrintable(log));
  }

  void slowWriterLosesNothing() {
    make({{"FAKE_STEPS", "15"}, {"FAKE_SLOW", "1"}, {"FAKE_STEP_MS", "0"}});
    QVERIFY(c->start(fakeSpec(2)));
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Finished, kRunTimeout);
    QCOMPARE(int(c->store()->rankSeries(0).size()), 15);
    QCOMPARE(int(c->store()->rankSeries(1).size()), 15);
    QCOMPARE(c->server()->counters().malformed, 0);
  }

  void missingWorkerOrBadSpecLaunchesNothing() {
    make({});
    const QString root = RunDirectory::runsRoot();
    const int before = int(RunDirectory::listRuns(root).size());
    c->setWorkerProgram(data.filePath(QStringLiteral("no-such-worker")));
    QString error;
    QVERIFY(!c->start(fakeSpec(2), &error));
    QVERIFY(error.contains(QLatin1String("no-such-worker")));
    QCOMPARE(c->state(), State::Idle);

    c->setWorkerProgram(fakeWorker());
    RunSpec bad = fakeSpec(2);
    bad.batch_size = 0;
    QVERIFY(!c->start(bad, &error));
    QVERIFY2(error.contains(QLatin1String("batch_size")), qPrintable(error));
    QCOMPARE(c->state(), State::Idle);
    QCOMPARE(int(RunDirectory::listRuns(root).size()), before);
  }

  void cannotStartTwice() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QVERIFY(c->start(fakeSpec(1)));
    QString error;
    QVERIFY(!c->start(fakeSpec(1), &error));
    QVERIFY(error.contains(QLatin1String("already")));
    c->stop();
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), State::Stopped, kRunTimeout);
    QVERIFY(allGone(c->pids()));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRunController)
#include "test_run_controller.moc"

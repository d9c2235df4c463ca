// The hang doctor with real processes. A run of the real ddpdesk-worker (world 2, seed task, CPU)
// whose rank 1 is held in its data loading from step 5 (DDPDESK_FAULT_HOLD_RANK): the stall is
// said half the collective timeout after the last step, both ranks' stacks are taken while they
// hang and written to <run_dir>/stacks-<time>.txt, the verdict names rank 1 in its data loading
// and rank 0 waiting for it in an allreduce, both processes still run afterwards, and a stop
// then leaves no process (the held rank killed after the grace period). The same with a PyTorch DDP
// script (Gloo) whose rank 1's dataset never returns: its Python stack says __getitem__, rank 0's
// native one DDP's Reducer waiting for the gradient allreduce. Stacks asked for in a healthy run
// leave it training. The collector alone: a Python process whose client registered faulthandler
// (its Python and native stacks, and it runs on), no gdb or eu-stack on PATH (the note), and
// gdb where eu-stack is missing, and a process stopped by SIGSTOP, named and left stopped by
// either tool.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <memory>

#include "hang/hang_doctor.h"
#include "hang/stack_collector.h"
#include "local/script_run_util.h"
#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_controller.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {

constexpr int kTimeout = 300000;  // LibTorch start-up and a loaded box
// Half of it is the stall limit; the other half leaves the stack tool time before rank 0's
// collective times out (eu-stack takes tens of milliseconds a rank; gdb, where it is the only
// tool, 3-6 s a LibTorch rank on the 2-core machine, 8.4 s with a busy core beside the test).
constexpr double kCollectiveTimeoutS = 12.0;

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// Running, and not left stopped by a tracer (gdb detached): state R or S (or D), never T, t, Z.
// What /proc says of a process, for failure messages.
QString procState(qint64 pid) {
  const QString s = readText(QStringLiteral("/proc/%1/stat").arg(pid));
  const int close = s.lastIndexOf(QLatin1Char(')'));
  return QStringLiteral("pid %1: %2")
      .arg(pid)
      .arg(close < 0 ? QStringLiteral("gone") : s.mid(close + 2, 1));
}

char stateOf(qint64 pid) {
  const QByteArray s = readText(QStringLiteral("/proc/%1/stat").arg(pid)).toLatin1();
  const int close = s.lastIndexOf(')');
  return close < 0 || s.size() <= close + 2 ? 0 : s.at(close + 2);
}

bool runsOn(qint64 pid) {
  const QByteArray s = readText(QStringLiteral("/proc/%1/stat").arg(pid)).toLatin1();
  const int close = s.lastIndexOf(')');
  if (close < 0 || s.size() <= close + 2) return false;
  const char state = s.at(close + 2);
  return state == 'R' || state == 'S' || state == 'D';
}

}  // namespace

class TestHangDoctor : public QObject {
  Q_OBJECT
  QTemporaryDir home;
  std::unique_ptr<RunController> c;

  static RunSpec spec() {
    RunSpec s;
    s.task = "seed";
    s.nproc = 2;
    s.batch_size = 4;
    s.epochs = 1;  // 900 samples, 8 a step: 113 steps
    s.seed = 5;
    s.collective_timeout = kCollectiveTimeoutS;
    return s;
  }
  void make(const char* fault, const char* value) {
    c = std::make_unique<RunController>();
    c->setWorkerProgram(QStringLiteral(DDPDESK_REAL_WORKER));
    c->setGracePeriod(2000);  // a held rank never stops by itself: SIGKILL soon after
    QProcessEnvironment env;
    env.insert(QString::fromLatin1(fault), QString::fromLatin1(value));
    c->setExtraEnvironment(env);
  }
  QString text() const {
    return RunController::stateName(c->state()) + QStringLiteral(": ") + c->reason();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(home.isValid());
    useScratchHome(home);
    if (StackCollector::nativeTool().isEmpty())
      QSKIP("neither gdb nor eu-stack is installed (scripts/install-deps.sh --tests)");
  }
  void cleanup() { c.reset(); }

  void aRankHeldInItsDataLoadingIsNamed() {
    make("DDPDESK_FAULT_HOLD_RANK", "1:5");
    QSignalSpy warnings(c.get(), &RunController::warning);
    QSignalSpy taken(c.get(), &RunController::stacksTaken);
    QSignalSpy stalled(c.get(), &RunController::stalled);
    // When the store last saw a new step, and how long before the stall was said.
    QElapsedTimer sinceStep;
    qint64 lastStep = -1;
    qint64 silentForMs = -1;
    QElapsedTimer sinceStall;
    connect(c->store(), &MetricsStore::updated, this, [&] {
      if (c->store()->progress().step != lastStep) {
        lastStep = c->store()->progress().step;
        sinceStep.start();
      }
    });
    connect(c.get(), &RunController::warning, this, [&](const QString& w) {
      if (w.startsWith(QLatin1String("no optimizer step")) && silentForMs < 0) {
        silentForMs = sinceStep.elapsed();
        sinceStall.start();
      }
    });
    QVERIFY(c->start(spec()));
    QTRY_VERIFY2_WITH_TIMEOUT(taken.count() == 1 || RunController::isTerminal(c->state()),
                              qPrintable(text()), kTimeout);
    QVERIFY2(taken.count() == 1, qPrintable(text()));
    qInfo("stacks taken %lld ms after the stall was said", qint64(sinceStall.elapsed()));
    const QList<qint64> pids = c->pids();
    // Both ranks still run once their stacks were taken: gdb detached, nothing is left stopped.
    QVERIFY2(runsOn(pids.at(0)) && runsOn(pids.at(1)),
             qPrintable(procState(pids.at(0)) + QStringLiteral(", ") + procState(pids.at(1)) +
                        QStringLiteral(" after: ") + taken.at(0).at(1).toString() +
                        QStringLiteral("; ") + text()));
    QCOMPARE(c->state(), State::Running);
    QCOMPARE(lastStep, qint64(4));  // held in step 5's data loading

    // Said half the collective timeout after the last step (the watch checks every 250 ms; the
    // loaded machine's event loop may add a little).
    qInfo("stall said %lld ms after the last step", silentForMs);
    QVERIFY2(silentForMs >= qint64(kCollectiveTimeoutS * 500) - 300 &&
                 silentForMs <= qint64(kCollectiveTimeoutS * 500) + 2500,
             qPrintable(QString::number(silentForMs)));
    const QString stallLine = QStringLiteral("no optimizer step from any rank for");
    QVERIFY(!warnings.isEmpty());
    QVERIFY2(warnings.at(0).at(0).toString().startsWith(stallLine) &&
                 warnings.at(0).at(0).toString().endsWith(
                     QLatin1String("(half the collective timeout of 12 s); taking every rank's "
                                   "stack")),
             qPrintable(warnings.at(0).at(0).toString()));

    const QString verdict =
        QStringLiteral("rank 1 is in its data loading; rank 0 waits for it in an allreduce");
    QVERIFY(taken.at(0).at(0).toString().startsWith(stallLine));
    QCOMPARE(taken.at(0).at(1).toString(), verdict);
    QCOMPARE(stalled.count(), 1);
    QVERIFY2(stalled.at(0).at(0).toString().startsWith(stallLine) &&
                 stalled.at(0).at(0).toString().endsWith(QStringLiteral(": ") + verdict),
             qPrintable(stalled.at(0).at(0).toString()));

    // The file: in the run directory, the verdict first, then each rank's stacks.
    const QString path = taken.at(0).at(2).toString();
    QCOMPARE(QFileInfo(path).absolutePath(), QFileInfo(c->runDirectory()).absoluteFilePath());
    QVERIFY2(QRegularExpression(QStringLiteral(R"(^stacks-\d{8}-\d{6}\.txt$)"))
                 .match(QFileInfo(path).fileName())
                 .hasMatch(),
             qPrintable(path));
    const QString file = readText(path);
    const QStringList lines = file.split(QLatin1Char('\n'));
    QVERIFY(lines.size() > 20);
    QVERIFY(lines.at(0).startsWith(QLatin1String("ddpdesk hang doctor, ")));
    QCOMPARE(lines.at(3), QStringLiteral("verdict: ") + verdict);
    for (int r = 0; r < 2; ++r)
      QVERIFY2(file.contains(QStringLiteral("===== rank %1, pid %2: native stacks (%3) =====")
                                 .arg(r)
                                 .arg(pids.at(r))
                                 .arg(StackCollector::nativeTool())),
               qPrintable(file.left(2000)));
    QVERIFY(file.contains(QLatin1String("FaultInjection::hold_data_loading")));
    QVERIFY(file.contains(QLatin1String("GradSync::finish_window")));
    QVERIFY(readText(RunDirectory::monitorLogPath(c->runDirectory()))
                .contains(QStringLiteral("hang doctor: ") + verdict));

    // Stopped: neither rank reaches the step boundary where a stop is agreed, so both are killed
    // after the grace period, and nothing is left.
    c->stop();
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(text()), kTimeout);
    QVERIFY2(c->state() == State::Stopped, qPrintable(text()));
    QVERIFY(allGone(pids));
    QCOMPARE(stalled.count(), 1);  // one stall, said once
  }

  void aScriptRankHeldInItsDataLoaderIsNamed() {
    if (!pythonHasTorch(QStringLiteral(DDPDESK_PYTHON3)))
      QSKIP("python3-torch is not installed for " DDPDESK_PYTHON3);
    c = std::make_unique<RunController>();
    c->setWorkerProgram(QStringLiteral(DDPDESK_REAL_WORKER));  // the client beside it
    c->setGracePeriod(2000);
    RunSpec s;
    s.task = "python";
    s.script = DDPDESK_SOURCE_DIR "/tests/monitor/hang/py/held_loader.py";
    s.python = DDPDESK_PYTHON3;
    s.script_args = "1 5";  // rank 1, from step 5
    s.nproc = 2;
    s.collective_timeout = kCollectiveTimeoutS;
    QSignalSpy taken(c.get(), &RunController::stacksTaken);
    QVERIFY(c->start(s));
    QTRY_VERIFY2_WITH_TIMEOUT(taken.count() == 1 || RunController::isTerminal(c->state()),
                              qPrintable(text()), kTimeout);
    QVERIFY2(taken.count() == 1, qPrintable(text()));
    const QList<qint64> pids = c->pids();
    QVERIFY2(runsOn(pids.at(0)) && runsOn(pids.at(1)),
             qPrintable(procState(pids.at(0)) + QStringLiteral(", ") + procState(pids.at(1)) +
                        QStringLiteral("; ") + text()));
    QCOMPARE(c->store()->progress().step, qint64(4));
    QCOMPARE(taken.at(0).at(1).toString(),
             QStringLiteral("rank 1 is in its data loading; rank 0 waits for it in an allreduce"));
    const QString file = readText(taken.at(0).at(2).toString());
    for (int r = 0; r < 2; ++r)
      QVERIFY(file.contains(QStringLiteral("===== rank %1, pid %2: Python stacks (faulthandler)")
                                .arg(r)
                                .arg(pids.at(r))));
    QVERIFY(file.contains(
        QRegularExpression(QStringLiteral("held_loader\\.py\", line \\d+ in __getitem__"))));
    QVERIFY(file.contains(QLatin1String("c10d::Reducer::finalize_backward")));
    // The script's own collective timeout is PyTorch's (30 min): the test stops it; the held
    // ranks never reach a step boundary and are killed after the grace period.
    c->stop();
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(text()), kTimeout);
    QVERIFY2(c->state() == State::Stopped, qPrintable(text()));
    QVERIFY(allGone(pids));
  }

  void stacksAskedForLeaveAHealthyRunTraining() {
    make("DDPDESK_FAULT_SLOW_RANK", "0:15");  // slow enough to ask mid-run
    QSignalSpy taken(c.get(), &RunController::stacksTaken);
    QSignalSpy stalled(c.get(), &RunController::stalled);
    QVERIFY(!c->takeStacks());  // no run
    QVERIFY(c->start(spec()));
    QTRY_VERIFY2_WITH_TIMEOUT(
        c->store()->progress().step >= 3 || RunController::isTerminal(c->state()),
        qPrintable(text()), kTimeout);
    QVERIFY(c->takeStacks());
    QVERIFY(c->takingStacks());
    QVERIFY(!c->takeStacks());  // one at a time
    QTRY_VERIFY2_WITH_TIMEOUT(taken.count() == 1, qPrintable(text()), kTimeout);
    QCOMPARE(taken.at(0).at(0).toString(), QString());  // asked for, not a stall
    const QString file = readText(taken.at(0).at(2).toString());
    QVERIFY(file.contains(QLatin1String("why: asked for")));
    QVERIFY(file.contains(QLatin1String("===== rank 0, pid")));
    QVERIFY(file.contains(QLatin1String("===== rank 1, pid")));
    // Training goes on after the stacks: more steps, then a normal stop.
    const qint64 after = c->store()->progress().step;
    QTRY_VERIFY2_WITH_TIMEOUT(
        c->store()->progress().step > after + 2 || RunController::isTerminal(c->state()),
        qPrintable(text()), kTimeout);
    QVERIFY2(!RunController::isTerminal(c->state()) || c->state() == State::Finished,
             qPrintable(text()));
    c->stop();
    QTRY_VERIFY2_WITH_TIMEOUT(RunController::isTerminal(c->state()), qPrintable(text()), kTimeout);
    QVERIFY2(c->state() == State::Stopped || c->state() == State::Finished, qPrintable(text()));
    QVERIFY(allGone(c->pids()));
    QCOMPARE(stalled.count(), 0);
  }

  void aPythonRanksStacksThroughItsClient() {
    // A Python process that imported the client inside a run directory, sleeping in a dataset's
    // __getitem__: the collector signals it for its Python stacks and attaches for its native
    // ones; it runs on, and its Python stack places it in its data loading.
    QTemporaryDir runDir;
    QProcess py;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PYTHONPATH"), QStringLiteral(DDPDESK_PYTHON_DIR));
    env.insert(QStringLiteral("PYTHONDONTWRITEBYTECODE"), QStringLiteral("1"));
    env.insert(QStringLiteral("DDPDESK_RUN_DIR"), runDir.path());
    env.insert(QStringLiteral("RANK"), QStringLiteral("1"));
    env.insert(QStringLiteral("WORLD_SIZE"), QStringLiteral("2"));
    py.setProcessEnvironment(env);
    py.start(QStringLiteral(DDPDESK_PYTHON3),
             {QStringLiteral("-c"), QStringLiteral("import ddpdesk, time\n"
                                                   "class Shards:\n"
                                                   "    def __getitem__(self, i):\n"
                                                   "        print('loading', flush=True)\n"
                                                   "        while True:\n"
                                                   "            time.sleep(0.05)\n"
                                                   "Shards()[0]\n")});
    QVERIFY(py.waitForStarted());
    QByteArray out;
    QTRY_VERIFY2_WITH_TIMEOUT((out += py.readAllStandardOutput()).contains("loading"),
                              qPrintable(QString::fromLocal8Bit(out + py.readAllStandardError())),
                              30000);
    QVERIFY(
        readText(StackCollector::pythonStackFile(runDir.path(), 1))
            .startsWith(QStringLiteral("ddpdesk faulthandler pid=%1 signal=").arg(py.processId())));

    StackCollector collector;
    QSignalSpy collected(&collector, &StackCollector::collected);
    StackTarget t;
    t.rank = 1;
    t.pid = py.processId();
    QVERIFY(collector.collect({t}, runDir.path()));
    QVERIFY(collected.wait(60000));
    const auto stacks = collected.at(0).at(0).value<std::vector<RankStacks>>();
    QCOMPARE(int(stacks.size()), 1);
    QVERIFY2(stacks[0].python.contains(QLatin1String(" in __getitem__")),
             qPrintable(stacks[0].python));
    QVERIFY2(stacks[0].native.contains(QLatin1String("#0 ")), qPrintable(stacks[0].problem));
    QCOMPARE(classifyRank(stacks[0]).phase, StackPhase::DataLoading);
    QVERIFY(py.state() == QProcess::Running && runsOn(py.processId()));
    // A second collection reads only what the second dump appended.
    collected.clear();
    QVERIFY(collector.collect({t}, runDir.path()));
    QVERIFY(collected.wait(60000));
    const auto again = collected.at(0).at(0).value<std::vector<RankStacks>>();
    QCOMPARE(again[0].python.count(QLatin1String(" in __getitem__")), 1);
    py.kill();
    py.waitForFinished();
  }

  void withoutGdbOrEuStackTheNoteSaysWhatToInstall() {
    QProcess sleeper;
    sleeper.start(QStringLiteral("/bin/sleep"), {QStringLiteral("30")});
    QVERIFY(sleeper.waitForStarted());
    const QByteArray path = qgetenv("PATH");
    qputenv("PATH", QByteArray("/nonexistent"));
    StackCollector collector;
    QSignalSpy collected(&collector, &StackCollector::collected);
    StackTarget t;
    t.pid = sleeper.processId();
    StackTarget gone;
    gone.rank = 1;
    gone.problem = QStringLiteral("runs on node7, not on this machine");
    QVERIFY(collector.collect({t, gone}, QDir::tempPath()));
    const bool said = collected.wait(10000);
    qputenv("PATH", path);
    QVERIFY(said);
    QCOMPARE(collected.at(0).at(1).toString(), StackCollector::missingToolNote());
    QVERIFY(StackCollector::missingToolNote().contains(QLatin1String("gdb")) &&
            StackCollector::missingToolNote().contains(QLatin1String("elfutils")));
    const auto stacks = collected.at(0).at(0).value<std::vector<RankStacks>>();
    QCOMPARE(int(stacks.size()), 2);
    QVERIFY(stacks[0].native.isEmpty());
    QCOMPARE(stacks[1].problem, gone.problem);
    QCOMPARE(hangVerdict(stacks),
             QStringLiteral("no rank's stack could be read; no stack of ranks 0-1"));
    QVERIFY(runsOn(sleeper.processId()));
    sleeper.kill();
    sleeper.waitForFinished();
  }

  // gdb where eu-stack (the first choice) is missing: its attach, print and detach leave the
  // process running.
  void gdbWhereEuStackIsMissing() {
    const QString gdb = QStandardPaths::findExecutable(QStringLiteral("gdb"));
    if (gdb.isEmpty()) QSKIP("gdb is not installed");
    QTemporaryDir bin;
    QVERIFY(QFile::link(gdb, bin.filePath(QStringLiteral("gdb"))));
    QProcess sleeper;
    sleeper.start(QStringLiteral("/bin/sleep"), {QStringLiteral("30")});
    QVERIFY(sleeper.waitForStarted());
    const QByteArray path = qgetenv("PATH");
    qputenv("PATH", QFile::encodeName(bin.path()));
    QCOMPARE(StackCollector::nativeTool(), QStringLiteral("gdb"));
    StackCollector collector;
    QSignalSpy collected(&collector, &StackCollector::collected);
    StackTarget t;
    t.pid = sleeper.processId();
    QVERIFY(collector.collect({t}, QDir::tempPath()));
    const bool said = collected.wait(60000);
    qputenv("PATH", path);
    QVERIFY(said);
    QCOMPARE(collected.at(0).at(1).toString(), QString());
    const auto stacks = collected.at(0).at(0).value<std::vector<RankStacks>>();
    QVERIFY2(stacks[0].native.contains(QLatin1String("Thread 1")) &&
                 stacks[0].native.contains(QLatin1String("nanosleep")),
             qPrintable(stacks[0].native + stacks[0].problem));
    QVERIFY(runsOn(sleeper.processId()));
    sleeper.kill();
    sleeper.waitForFinished();
  }

  // A rank stopped by SIGSTOP before the doctor came: marked stopped (the verdict names it), and
  // stopped again after each tool's attach and detach (its detach may resume it, and the
  // collector's resume of a process a tracer left stopped must not touch it).
  void aStoppedProcessIsMarkedAndLeftStopped_data() {
    QTest::addColumn<QString>("tool");
    QTest::newRow("eu-stack") << QStringLiteral("eu-stack");
    QTest::newRow("gdb") << QStringLiteral("gdb");
  }
  void aStoppedProcessIsMarkedAndLeftStopped() {
    QFETCH(QString, tool);
    const QString exe = QStandardPaths::findExecutable(tool);
    if (exe.isEmpty()) QSKIP(qPrintable(tool + QStringLiteral(" is not installed")));
    QTemporaryDir bin;
    QVERIFY(QFile::link(exe, bin.filePath(tool)));
    QProcess sleeper, other;
    sleeper.start(QStringLiteral("/bin/sleep"), {QStringLiteral("30")});
    other.start(QStringLiteral("/bin/sleep"), {QStringLiteral("30")});
    QVERIFY(sleeper.waitForStarted() && other.waitForStarted());
    QCOMPARE(::kill(pid_t(sleeper.processId()), SIGSTOP), 0);
    QTRY_COMPARE_WITH_TIMEOUT(stateOf(sleeper.processId()), 'T', 5000);
    const QByteArray path = qgetenv("PATH");
    qputenv("PATH", QFile::encodeName(bin.path()));
    StackCollector collector;
    QSignalSpy collected(&collector, &StackCollector::collected);
    StackTarget running, stopped;
    running.rank = 0;
    running.pid = other.processId();
    stopped.rank = 1;
    stopped.pid = sleeper.processId();
    QVERIFY(collector.collect({running, stopped}, QDir::tempPath()));
    const bool said = collected.wait(60000);
    qputenv("PATH", path);
    QVERIFY(said);
    QCOMPARE(collector.tool(), tool);
    const auto stacks = collected.at(0).at(0).value<std::vector<RankStacks>>();
    QCOMPARE(int(stacks.size()), 2);
    QVERIFY(!stacks[0].stopped);
    QVERIFY(stacks[1].stopped);
    QVERIFY2(stacks[1].native.contains(QLatin1String("#0 ")),
             qPrintable(stacks[1].native + stacks[1].problem));
    QVERIFY(hangVerdict(stacks).startsWith(
        QLatin1String("rank 1 is stopped (SIGSTOP/SIGTSTP): it is not running")));
    // Still stopped a while later (a SIGCONT, or a detach that resumed it, would show by now),
    // and the other one runs.
    QTest::qWait(300);
    QCOMPARE(stateOf(sleeper.processId()), 'T');
    QVERIFY(runsOn(other.processId()));
    sleeper.kill();
    other.kill();
    sleeper.waitForFinished();
    other.waitForFinished();
  }

  // The stacks file names the tool that took the native stacks, and nothing it does not know
  // (eu-stack is chosen first whether gdb is installed or not).
  void theStacksFileNamesTheToolAsItIs() {
    RankStacks s;
    s.rank = 1;
    s.pid = 42;
    s.stopped = true;
    const QString text =
        HangDoctor::fileText(QStringLiteral("/runs/r"), QString(), QStringLiteral("v"),
                             QStringLiteral("eu-stack"), QString(), {s});
    QVERIFY2(text.contains(QLatin1String("\nnative stacks: eu-stack\n")), qPrintable(text));
    QVERIFY2(text.contains(QLatin1String(
                 "rank 1 (pid 42): no stack (stopped by a signal, state T: left stopped)\n")),
             qPrintable(text));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestHangDoctor)
#include "test_hang_doctor.moc"

// Following a run ddpdesk did not start: real ddpdesk-worker ranks started by the test with
// torchrun's variables and --run-dir (no monitor socket), followed through their
// metrics/rank-N.jsonl files by `ddpdesk --headless --attach DIR` and by RunController::attach:
// every step arrives once, the run ends with its ranks, Stop reaches local ranks gracefully, a
// killed rank fails the run, and bad --attach input is one line with exit code 2.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

#include "follow/run_follower.h"
#include "hand_started_run.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "run/run_controller.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {

constexpr int kTimeout = 180000;  // small shared machines: never a timing test

QString worker() {
  return QStringLiteral(DDPDESK_REAL_WORKER);
}

QStringList seedArgs(int epochs) {
  return {"--task", "seed", "--dataset-size", "400", "--epochs", QString::number(epochs),
          "--seed", "5"};
}

// Step lines in a rank's file: what the follower must have delivered, no more, no less.
int stepLines(const QString& runDir, int rank) {
  QFile f(RunFollower::rankFile(runDir, rank));
  if (!f.open(QIODevice::ReadOnly)) return -1;
  int n = 0;
  while (!f.atEnd())
    if (f.readLine().contains("\"type\":\"step\"")) ++n;
  return n;
}

// A long run followed by `c` is under way: every hello read and a few steps in.
bool trainingFollowed(const RunController& c) {
  return QTest::qWaitFor(
      [&] { return c.state() == State::Running && c.store()->global().size() >= 5; }, kTimeout);
}

}  // namespace

class TestAttachReal : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void headlessAttachFollowsAHandStartedRunToItsEnd() {
    QTemporaryDir dir;
    QProcess attach;
    attach.start(QStringLiteral(DDPDESK_BIN),
                 {"--headless", "--attach", dir.path()});  // before any rank file exists
    QVERIFY(attach.waitForStarted());
    HandStartedRun run(worker(), dir.path(), 2, seedArgs(1));
    QString out;
    QVERIFY2(run.waitAllExited(kTimeout, &out), qPrintable(out));
    QVERIFY(attach.waitForFinished(kTimeout));
    const QString text = QString::fromLocal8Bit(attach.readAllStandardOutput());
    const QString err = QString::fromLocal8Bit(attach.readAllStandardError());
    QCOMPARE(attach.exitCode(), 0);
    QVERIFY2(text.contains("finished after"), qPrintable(text + err));
    QVERIFY2(text.contains(": 50 steps"), qPrintable(text));
    for (qint64 pid : run.pids()) QVERIFY2(text.contains(QString::number(pid)), qPrintable(text));
    QVERIFY(err.contains("following"));
  }

  void theControllerGetsEveryStepOnceAndTheRanksEnding() {
    QTemporaryDir dir;
    RunController c;
    QVERIFY(c.attach(dir.path()));
    QCOMPARE(c.state(), State::Starting);
    HandStartedRun run(worker(), dir.path(), 2, seedArgs(1));
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c.state()), kTimeout);
    QCOMPARE(c.state(), State::Finished);
    QCOMPARE(c.worldSize(), 2);
    QCOMPARE(c.pids(), run.pids());
    for (int r = 0; r < 2; ++r) {
      QCOMPARE(int(c.store()->rankSeries(r).size()), stepLines(dir.path(), r));
      QCOMPARE(stepLines(dir.path(), r), 50);
      QCOMPARE(c.ranks()[r].exitText, QStringLiteral("finished"));
    }
    QCOMPARE(int(c.store()->global().size()), 50);
    QVERIFY(!QFile::exists(dir.filePath("status.json")));  // nothing written into the run
  }

  void stopReachesLocalRanksGracefully() {
    QTemporaryDir dir;
    RunController c;
    QVERIFY(c.attach(dir.path()));
    HandStartedRun run(worker(), dir.path(), 2, seedArgs(500));
    QVERIFY(trainingFollowed(c));
    c.stop();
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c.state()), kTimeout);
    QCOMPARE(c.state(), State::Stopped);
    QVERIFY2(run.waitAllExited(kTimeout), "a rank did not exit 0 after the graceful stop");
    QVERIFY(!QDir(dir.filePath("checkpoints")).entryList({"step-*.pt"}).isEmpty());
  }

  void aKilledRankFailsTheRun() {
    QTemporaryDir dir;
    RunController c;
    QVERIFY(c.attach(dir.path()));
    HandStartedRun run(worker(), dir.path(), 2, seedArgs(500));
    QVERIFY(trainingFollowed(c));
    ::kill(pid_t(run.pids()[1]), SIGKILL);
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c.state()), kTimeout);
    QCOMPARE(c.state(), State::Failed);
    QVERIFY2(c.ranks()[1].exitText.contains("exited without a last message"),
             qPrintable(c.ranks()[1].exitText));
    QVERIFY(c.ranks()[1].crashed);
  }

  void badAttachInputIsOneLineAndExitCodeTwo() {
    QTemporaryDir dir;
    const QList<QStringList> cases = {
        {"--headless", "--attach", dir.filePath("missing")},
        {"--headless", "--attach", dir.path(), "--epochs", "3"},
    };
    for (const QStringList& args : cases) {
      QProcess p;
      p.start(QStringLiteral(DDPDESK_BIN), args);
      QVERIFY(p.waitForFinished(60000));
      QCOMPARE(p.exitCode(), 2);
      const QString err = QString::fromLocal8Bit(p.readAllStandardError()).trimmed();
      QVERIFY2(!err.contains('\n') && err.contains("--"), qPrintable(err));
    }
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestAttachReal)
#include "test_attach_real.moc"

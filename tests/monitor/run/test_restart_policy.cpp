// planRestart (run/restart_policy.h): which failures restart a run (an out-of-memory only with
// --fit-batch), the backoff, and the note a failure that does not restart carries; restartLine's
// two wordings.
#include <QtTest>

#include "qt_test_main.h"
#include "run/restart_policy.h"

using namespace ddpdesk;

class TestRestartPolicy : public QObject {
  Q_OBJECT
  static RunSpec withRestarts(int n, double backoff = 2) {
    RunSpec s;
    s.max_restarts = n;
    s.restart_backoff = backoff;
    return s;
  }
  static RunController::Failure killed() {
    RunController::Failure f;
    f.rank = 1;
    f.signal = 9;
    return f;
  }

 private Q_SLOTS:
  void offByDefault() {
    const RestartPlan p = planRestart(RunSpec(), 0, killed(), true, false);
    QVERIFY(!p.restart);
    QVERIFY(p.note.isEmpty());  // nothing was asked for: nothing to explain
  }
  void backoffDoublesUpToTheCap() {
    const RunSpec s = withRestarts(20, 2);
    QCOMPARE(planRestart(s, 0, killed(), true, false).delayMs, 2000);
    QCOMPARE(planRestart(s, 1, killed(), true, false).delayMs, 4000);
    QCOMPARE(planRestart(s, 2, killed(), true, false).attempt, 3);
    QCOMPARE(planRestart(s, 2, killed(), true, false).delayMs, 8000);
    QCOMPARE(planRestart(s, 12, killed(), true, false).delayMs, kMaxRestartDelayMs);
    QCOMPARE(planRestart(withRestarts(1, 0), 0, killed(), true, false).delayMs, 0);
  }
  // The line a restart is said in; a Slurm requeue (maxRestarts 0) has no limit or delay of ours.
  void restartLines() {
    QCOMPARE(restartLine(1, 3, 2000, 120, QStringLiteral("rank 1 was killed")),
             QStringLiteral("restart 1 of 3 in 2 s after step 120: rank 1 was killed"));
    QCOMPARE(restartLine(2, 0, 0, 57, QStringLiteral("job 9 was requeued by Slurm; pending")),
             QStringLiteral("restart 2 after step 57: job 9 was requeued by Slurm; pending"));
  }
  void exhaustedSaysSo() {
    const RestartPlan one = planRestart(withRestarts(1), 1, killed(), true, false);
    QVERIFY(!one.restart);
    QCOMPARE(one.note, QStringLiteral("after 1 restart, none left"));
    QCOMPARE(planRestart(withRestarts(3), 3, killed(), true, false).note,
             QStringLiteral("after 3 restarts, none left"));
  }
  void noRestartBeforeTrainingForBadInputOrAStop() {
    const RunSpec s = withRestarts(3);
    QCOMPARE(planRestart(s, 0, killed(), false, false).note,
             QStringLiteral("no restart: the run failed before its first optimizer step"));
    RunController::Failure bad;
    bad.rank = 0;
    bad.exitCode = 2;
    QCOMPARE(planRestart(s, 0, bad, true, false).note,
             QStringLiteral("no restart: rank 0 refused its input (exit 2)"));
    RunController::Failure other = bad;
    other.exitCode = 1;
    QVERIFY(planRestart(s, 0, other, true, false).restart);
    RunController::Failure refused;
    refused.rejected = true;
    QVERIFY(!planRestart(s, 0, refused, true, false).restart);
    const RestartPlan stopped = planRestart(s, 0, killed(), true, true);
    QVERIFY(!stopped.restart);
    QVERIFY(stopped.note.isEmpty());
  }
  // A worker out of memory (exit 3) would run out again at the same micro-batch: no restart,
  // unless --fit-batch fits a smaller one as the restart starts. A script's exit 3 is its own.
  void outOfMemoryRestartsOnlyWithFitBatch() {
    RunSpec s = withRestarts(3);
    RunController::Failure oom;
    oom.rank = 1;
    oom.exitCode = 3;
    const RestartPlan no = planRestart(s, 0, oom, true, false);
    QVERIFY(!no.restart);
    QCOMPARE(no.note, QStringLiteral("no restart: rank 1 ran out of memory and would again at "
                                     "this micro-batch (--fit-batch fits one)"));
    s.fit_batch = true;
    QVERIFY(planRestart(s, 0, oom, true, false).restart);
    RunSpec script = withRestarts(3);
    script.task = "python";
    script.script = "train.py";
    QVERIFY(planRestart(script, 0, oom, true, false).restart);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRestartPolicy)
#include "test_restart_policy.moc"

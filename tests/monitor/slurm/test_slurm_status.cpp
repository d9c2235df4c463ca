// What Slurm's tools print, read back: squeue's line, scontrol's key=value dump, sacct's line,
// the state words mapped onto ddpdesk's six job states, and srun's report of a failed task; a
// requeued job as Slurm reports it (never ended on its way back; held; failed again).
#include <QtTest>

#include "qt_test_main.h"
#include "slurm/slurm_status.h"

using namespace ddpdesk;
using S = SlurmJobStatus::State;

Q_DECLARE_METATYPE(SlurmJobStatus::State)

class TestSlurmStatus : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void mapsStates_data() {
    QTest::addColumn<QString>("word");
    QTest::addColumn<S>("state");
    QTest::newRow("pending") << "PENDING" << S::Pending;
    QTest::newRow("configuring") << "CONFIGURING" << S::Pending;
    QTest::newRow("requeued") << "REQUEUED" << S::Pending;
    QTest::newRow("running") << "RUNNING" << S::Running;
    QTest::newRow("completing") << "COMPLETING" << S::Running;
    QTest::newRow("lower case") << "running" << S::Running;
    QTest::newRow("completed") << "COMPLETED" << S::Completed;
    QTest::newRow("failed") << "FAILED" << S::Failed;
    QTest::newRow("node fail") << "NODE_FAIL" << S::Failed;
    QTest::newRow("oom") << "OUT_OF_MEMORY" << S::Failed;
    QTest::newRow("unknown word") << "SOMETHING_NEW" << S::Failed;
    QTest::newRow("cancelled") << "CANCELLED" << S::Cancelled;
    QTest::newRow("sacct cancelled by") << "CANCELLED by 1000" << S::Cancelled;
    QTest::newRow("sacct truncated") << "CANCELLED+" << S::Cancelled;
    QTest::newRow("timeout") << "TIMEOUT" << S::TimedOut;
  }
  void mapsStates() {
    QFETCH(QString, word);
    QFETCH(S, state);
    const auto got = mapSlurmState(word);
    QVERIFY(got.has_value());
    QCOMPARE(*got, state);
  }

  void emptyIsNoState() {
    QVERIFY(!mapSlurmState(QString()).has_value());
    QVERIFY(!mapSlurmState(QStringLiteral("  ")).has_value());
  }

  void squeueLines() {
    auto p = parseSqueue(QStringLiteral("PENDING|Resources|\n"));
    QVERIFY(p);
    QCOMPARE(p->state, S::Pending);
    QCOMPARE(p->reason, QStringLiteral("Resources"));
    QCOMPARE(describeSlurmStatus(*p), QStringLiteral("pending (Resources)"));
    auto r = parseSqueue(QStringLiteral("RUNNING|None|node[1-2]"));
    QVERIFY(r);
    QCOMPARE(r->state, S::Running);
    QCOMPARE(r->nodes, QStringLiteral("node[1-2]"));
    QCOMPARE(describeSlurmStatus(*r), QStringLiteral("running on node[1-2]"));
    QCOMPARE(r->restarts, -1);                                     // not said
    auto q = parseSqueue(QStringLiteral("PENDING|BeginTime||1"));  // requeued once
    QVERIFY(q);
    QCOMPARE(q->restarts, 1);
    QCOMPARE(q->state, S::Pending);
    QCOMPARE(describeSlurmStatus(*q), QStringLiteral("pending (BeginTime)"));
    QVERIFY(!parseSqueue(QString()).has_value());  // no longer in the queue
  }

  void scontrolDump() {
    const QString text = QStringLiteral(
        "JobId=12 JobName=ddpdesk-fmnist-mlp\n"
        "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
        "   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)\n"
        "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15\n"
        "   NodeList=vm\n"
        "   BatchHost=vm\n");
    auto s = parseScontrolJob(text);
    QVERIFY(s);
    QCOMPARE(s->state, S::TimedOut);
    QCOMPARE(s->slurmState, QStringLiteral("TIMEOUT"));
    QCOMPARE(s->reason, QStringLiteral("TimeLimit"));
    QCOMPARE(s->nodes, QStringLiteral("vm"));
    QCOMPARE(s->exitCode, QStringLiteral("0:15"));
    QCOMPARE(s->restarts, 0);
    QVERIFY(s->ended());
    QCOMPARE(describeSlurmStatus(*s), QStringLiteral("timed out (exit 0:15)"));
    QVERIFY(!parseScontrolJob(QStringLiteral("slurm_load_jobs error: Invalid job id specified")));
  }

  // What Slurm 22.05.8 said about a --requeue job (tests/slurm/with_slurm.sh, captured with
  // `scontrol show job` and squeue -O 'State:0|,Reason:0|,NodeList:0|,RestartCnt:0' every 0.2 s,
  // two cores loaded): on its way back to the queue after `scontrol requeue`, never an ended state
  // — COMPLETING with its count grown while the killed attempt is cleaned up (squeue said
  // "COMPLETING|None|vm|1" or already "PENDING|BeginTime||1"), then PENDING; its new attempt
  // failing for real (the script exited 3) is FAILED with that same count.
  void requeuedJobAsSlurmSaysIt() {
    auto completing = parseScontrolJob(
        QStringLiteral("JobId=3767 JobName=job2.sh\n"
                       "   JobState=COMPLETING Reason=None Dependency=(null)\n"
                       "   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0\n"
                       "   SubmitTime=2026-12-07T09:47:09 EligibleTime=2026-12-07T09:47:09\n"
                       "   StartTime=2026-12-07T09:47:12 EndTime=Unknown Deadline=N/A\n"
                       "   NodeList=vm\n"));
    QVERIFY(completing);
    QVERIFY(!completing->ended());
    QCOMPARE(completing->restarts, 1);
    auto pending = parseScontrolJob(
        QStringLiteral("JobId=3767 JobName=job2.sh\n"
                       "   JobState=PENDING Reason=BeginTime Dependency=(null)\n"
                       "   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0\n"
                       "   SubmitTime=2026-12-07T09:47:15 EligibleTime=2026-12-07T09:49:16\n"
                       "   StartTime=2026-12-07T09:49:16 EndTime=Unknown Deadline=N/A\n"
                       "   NodeList=(null)\n"));
    QVERIFY(pending);
    QCOMPARE(pending->state, S::Pending);
    QCOMPARE(describeSlurmStatus(*pending), QStringLiteral("pending (BeginTime)"));
    auto queued = parseSqueue(QStringLiteral("COMPLETING|None|vm|1"));
    QVERIFY(queued);
    QVERIFY(!queued->ended());
    auto failed = parseScontrolJob(
        QStringLiteral("JobId=3771 JobName=job2.sh\n"
                       "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
                       "   Priority=4294901754 Nice=0 Account=(null) QOS=(null)\n"
                       "   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n"
                       "   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=3:0\n"
                       "   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A\n"
                       "   SubmitTime=2026-12-07T09:49:27 EligibleTime=2026-12-07T09:49:30\n"
                       "   AccrueTime=2026-12-07T09:51:28\n"
                       "   StartTime=2026-12-07T09:49:30 EndTime=2026-12-07T09:49:30 Deadline=N/A\n"
                       "   NodeList=vm\n"
                       "   BatchHost=vm\n"));
    QVERIFY(failed);
    QVERIFY(failed->ended());
    QCOMPARE(failed->state, S::Failed);
    QCOMPARE(failed->restarts, 1);
    QCOMPARE(describeSlurmStatus(*failed), QStringLiteral("failed (exit 3:0)"));
  }

  // Requeued held (`scontrol requeuehold`; Slurm does so itself when a start fails on a node:
  // "launch failed requeued held"): pending, with Slurm's reason, which says it is held (it will
  // not start until released). scontrol writes the reason's blanks as '_', squeue does not: read,
  // both say the same. The requeuehold text is Slurm 22.05.8's; the launch failure (not produced
  // on the test cluster) is written the same way.
  void requeuedHeldJobIsPendingWithSlurmsReason() {
    auto s = parseScontrolJob(
        QStringLiteral("JobId=3770 JobName=job2.sh\n"
                       "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
                       "   Priority=0 Nice=0 Account=(null) QOS=(null)\n"
                       "   JobState=PENDING Reason=job_requeued_in_held_state Dependency=(null)\n"
                       "   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0\n"));
    QVERIFY(s);
    QCOMPARE(s->state, S::Pending);
    QCOMPARE(s->restarts, 1);
    QCOMPARE(describeSlurmStatus(*s), QStringLiteral("pending (job requeued in held state)"));
    auto q = parseSqueue(QStringLiteral("PENDING|job requeued in held state||1"));
    QVERIFY(q);
    QCOMPARE(describeSlurmStatus(*q), describeSlurmStatus(*s));
    auto launch = parseScontrolJob(QStringLiteral(
        "JobId=7 JobName=x\n   JobState=PENDING Reason=launch_failed_requeued_held "
        "Dependency=(null)\n   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0\n"));
    QVERIFY(launch);
    QCOMPARE(describeSlurmStatus(*launch), QStringLiteral("pending (launch failed requeued held)"));
  }

  void sacctLine() {
    auto s = parseSacct(QStringLiteral("NODE_FAIL|0:9|node3\n"));
    QVERIFY(s);
    QCOMPARE(s->state, S::Failed);
    QCOMPARE(s->slurmState, QStringLiteral("NODE_FAIL"));
    QCOMPARE(s->exitCode, QStringLiteral("0:9"));
    QCOMPARE(describeSlurmStatus(*s), QStringLiteral("failed (NODE_FAIL, exit 0:9)"));
    auto c = parseSacct(QStringLiteral("CANCELLED by 0|0:0|vm"));
    QVERIFY(c);
    QCOMPARE(describeSlurmStatus(*c), QStringLiteral("cancelled"));
    QVERIFY(!parseSacct(QString()).has_value());
  }

  // A job whose ranks a stop's signal ended fails with 143/130 or the signal: told apart from
  // a rank's own failure (exit 1), a kill (SIGKILL, 137) and a completed job.
  void stopSignalExit() {
    SlurmJobStatus s;
    s.state = SlurmJobStatus::State::Failed;
    for (const char* code : {"143:0", "130:0", "0:15", "0:2"}) {
      s.exitCode = QString::fromLatin1(code);
      QVERIFY2(endedByStopSignal(s), code);
    }
    for (const char* code : {"1:0", "137:0", "0:9", "", "143:1"}) {
      s.exitCode = QString::fromLatin1(code);
      QVERIFY2(!endedByStopSignal(s), code);
    }
    s.exitCode = QStringLiteral("143:0");
    s.state = SlurmJobStatus::State::Completed;
    QVERIFY(!endedByStopSignal(s));
  }

  void srunTaskError() {
    const QString out = QStringLiteral(
        "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
        "srun: error: vm: tasks 0-1: Killed\n"
        "srun: error: node7: task 1: Exited with exit code 3\n"
        "srun: error: node8: task 0: Killed\n");
    auto e = firstSrunTaskError(out);
    QVERIFY(e);
    QCOMPARE(e->node, QStringLiteral("node7"));
    QCOMPARE(e->task, 1);
    QCOMPARE(e->what, QStringLiteral("Exited with exit code 3"));
    QVERIFY(!firstSrunTaskError(QStringLiteral("all fine\n")));
  }

  void outOfMemoryTaskIsTheCause() {
    // Rank 1 out of memory (exit 3), rank 0 failing because rank 1 is gone (exit 1): srun lists
    // the tasks that ended together in task order (what a real Slurm printed).
    const QString out = QStringLiteral(
        "srun: error: vm: task 0: Exited with exit code 1\n"
        "srun: launch/slurm: _step_signal: Terminating StepId=6025.0\n"
        "srun: error: vm: task 1: Exited with exit code 3\n");
    auto e = causeSrunTaskError(out, /*workerRanks=*/true);
    QVERIFY(e);
    QCOMPARE(e->node, QStringLiteral("vm"));
    QCOMPARE(e->task, 1);
    QCOMPARE(e->what, QStringLiteral("Exited with exit code 3"));
    // A script's exit 3 means what the script says: the first line stays the cause.
    e = causeSrunTaskError(out, /*workerRanks=*/false);
    QVERIFY(e);
    QCOMPARE(e->task, 0);
    // No exit 3 (nor 30, 31...): the first line.
    e = causeSrunTaskError(QStringLiteral("srun: error: vm: task 1: Exited with exit code 1\n"
                                          "srun: error: vm: task 0: Exited with exit code 31\n"),
                           true);
    QVERIFY(e);
    QCOMPARE(e->task, 1);
    QVERIFY(!causeSrunTaskError(QStringLiteral("all fine\n"), true));
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestSlurmStatus)
#include "test_slurm_status.moc"

// RunController's Slurm launcher against stand-in sbatch/squeue/scontrol/scancel scripts (the
// real Slurm runs in tests/slurm/test_slurm_launcher.sh, where it is installed): a refused
// submission leaves one line and no run directory; a submitted job's state comes from squeue,
// then scontrol once squeue forgets it; Stop on a job that is pending cancels it (asking scancel
// to signal it only if running: a signal to a pending job is retried for 30 s), and the run ends
// Stopped, nothing trained, with slurm.json naming the job; Stop on a job last seen pending that
// has started since signals it (no cancel) and writes the stop file its ranks check as they
// start, also when it starts between scancel's two questions. A job that Slurm requeues after it
// ran (its restart count grows: COMPLETING, then pending) is a restart of the same run: said,
// counted, recorded, and the run ends with the requeued job; one whose new attempt fails is
// failed at once (Slurm reports a job on its way back to the queue as ended only when it ended).
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "checks/pre_start_check.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_controller.h"
#include "run/run_directory.h"
#include "slurm/slurm_job.h"

using namespace ddpdesk;
using State = RunController::State;

class TestSlurmController : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;
  QByteArray savedPath = qgetenv("PATH");

  // A stand-in tool in tmp/bin: logs its arguments to tmp/calls, then runs `body`.
  void tool(const QString& name, const QString& body) {
    QDir().mkpath(tmp.filePath("bin"));
    QFile f(tmp.filePath("bin/" + name));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QStringLiteral("#!/bin/sh\necho \"%1 $*\" >>'%2'\n%3\n")
                .arg(name, tmp.filePath("calls"), body)
                .toUtf8());
    f.close();
    f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  }
  QString calls() const {
    QFile f(tmp.filePath("calls"));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
  }
  RunSpec spec(const QString& dir) const {
    RunSpec s;
    s.launcher = "slurm";
    s.slurm_nodes = 1;
    s.slurm_tasks_per_node = 2;
    s.run_dir = tmp.filePath(dir).toStdString();
    return s;
  }

 private Q_SLOTS:
  void init() {
    QDir(tmp.filePath("bin")).removeRecursively();
    QFile::remove(tmp.filePath("calls"));
    qputenv("PATH", (tmp.filePath("bin") + ":" + savedPath).toUtf8());
  }
  void cleanupTestCase() { qputenv("PATH", savedPath); }

  void refusedJobLeavesNothing() {
    tool("sbatch",
         "echo 'sbatch: error: Batch job submission failed: Invalid account or "
         "account/partition combination specified' >&2; exit 1");
    RunController c;
    c.setWorkerProgram(ddpdesk::test::fakeWorker());
    QString error;
    QVERIFY2(c.start(spec("refused"), &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(c.state(), State::Failed, 30000);
    QVERIFY(c.failure().rejected);
    QCOMPARE(c.reason(),
             QStringLiteral("sbatch: error: Batch job submission failed: Invalid account or "
                            "account/partition combination specified"));
    QVERIFY(!QFileInfo::exists(tmp.filePath("refused")));
    QVERIFY(calls().startsWith("sbatch --parsable --chdir=" + tmp.filePath("refused") + " " +
                               tmp.filePath("refused/job.sbatch")));
  }

  void requeuedJobIsARestartOfTheSameRun() {
    const QString queue = tmp.filePath("squeue.out"), control = tmp.filePath("scontrol.out");
    const auto say = [](const QString& path, const char* text) {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(text);
    };
    tool("sbatch", "echo 4343");
    tool("squeue", QStringLiteral("cat '%1'").arg(queue));
    tool("scontrol", QStringLiteral("cat '%1'").arg(control));
    tool("sacct", "exit 1");
    say(queue, "RUNNING|None|n1|0\n");
    say(control, "");
    RunController c;
    c.setWorkerProgram(ddpdesk::test::fakeWorker());
    QSignalSpy restarting(&c, &RunController::restarting);
    RunSpec s = spec("requeue");
    s.slurm_requeue = true;
    QString error;
    QVERIFY2(c.start(s, &error), qPrintable(error));
    c.slurmJob()->setPollInterval(100);
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(), QStringLiteral("job 4343 running on n1"), 30000);
    // On its way back to the queue as Slurm 22.05 says it (test_slurm_status): the killed attempt
    // COMPLETING with its count grown, then pending until its begin time.
    say(queue, "COMPLETING|None|n1|1\n");
    QTRY_COMPARE_WITH_TIMEOUT(restarting.count(), 1, 30000);
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(), QStringLiteral("job 4343 pending"), 30000);
    QCOMPARE(c.slurmJob()->status().slurmState, QStringLiteral("REQUEUED"));
    QTest::qWait(250);  // more polls that still say so
    say(queue, "PENDING|BeginTime||1\n");
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(), QStringLiteral("job 4343 pending (BeginTime)"),
                              30000);
    QCOMPARE(c.state(), State::Starting);
    QCOMPARE(c.restarts(), 1);
    QCOMPARE(restarting.at(0).at(0).toInt(), 1);
    QCOMPARE(restarting.at(0).at(1).toInt(), 0);  // the limit is Slurm's
    QVERIFY2(restarting.at(0).at(2).toString().startsWith("job 4343 was requeued by Slurm"),
             qPrintable(restarting.at(0).at(2).toString()));
    say(queue, "RUNNING|None|n1|1\n");
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(), QStringLiteral("job 4343 running on n1"), 30000);
    say(control,
        "JobId=4343 JobName=x\n   JobState=COMPLETED Reason=None Restarts=1 ExitCode=0:0\n");
    say(queue, "");
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c.state()), 30000);
    QCOMPARE(c.state(), State::Finished);
    QCOMPARE(restarting.count(), 1);
    QCOMPARE(c.restarts(), 1);
    QFile log(tmp.filePath("requeue/monitor.log"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(log.readAll());
    QVERIFY2(text.contains("job 4343 requeued (restart 1): "), qPrintable(text));
    QFile status(tmp.filePath("requeue/status.json"));
    QVERIFY(status.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(status.readAll()).object().value("restarts").toInt(), 1);
    QFile record(tmp.filePath("requeue/metrics.jsonl"));
    QVERIFY(record.open(QIODevice::ReadOnly));
    QVERIFY(record.readAll().contains("\"event\":\"restart\""));
  }

  // A requeued job whose new attempt fails (it ran and failed between two polls, or slurmd
  // refused its start) is reported FAILED with the grown count: the run fails within a few
  // polls, not after minutes of "pending". scontrol's text is Slurm 22.05.8's.
  void requeuedJobThatFailsAgainFailsAtOnce() {
    const QString queue = tmp.filePath("squeue.out"), control = tmp.filePath("scontrol.out");
    const auto say = [](const QString& path, const char* text) {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(text);
    };
    tool("sbatch", "echo 3771");
    tool("squeue", QStringLiteral("cat '%1'").arg(queue));
    tool("scontrol", QStringLiteral("cat '%1'").arg(control));
    tool("sacct", "exit 1");
    say(queue, "RUNNING|None|vm|0\n");
    say(control, "");
    RunController c;
    c.setWorkerProgram(ddpdesk::test::fakeWorker());
    RunSpec s = spec("again");
    s.slurm_requeue = true;
    QString error;
    QVERIFY2(c.start(s, &error), qPrintable(error));
    c.slurmJob()->setPollInterval(100);
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(), QStringLiteral("job 3771 running on vm"), 30000);
    say(control,
        "JobId=3771 JobName=job2.sh\n"
        "   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n"
        "   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=3:0\n"
        "   SubmitTime=2026-12-07T09:49:27 EligibleTime=2026-12-07T09:49:30\n"
        "   StartTime=2026-12-07T09:49:30 EndTime=2026-12-07T09:49:30 Deadline=N/A\n"
        "   NodeList=vm\n");
    say(queue, "");
    QElapsedTimer took;
    took.start();
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c.state()), 30000);
    QVERIFY2(took.elapsed() < 3000, qPrintable(QString::number(took.elapsed())));
    QCOMPARE(c.state(), State::Failed);
    QCOMPARE(c.slurmJob()->status().state, SlurmJobStatus::State::Failed);
    QCOMPARE(c.slurmJob()->status().exitCode, QStringLiteral("3:0"));
  }

  void pendingJobStoppedIsCancelled() {
    tool("sbatch", "echo '4242;cluster'");
    // Pending until scancel ran; then gone from the queue, and scontrol tells the ending.
    tool("squeue", QStringLiteral("grep -q scancel '%1' || echo 'PENDING|Priority|'")
                       .arg(tmp.filePath("calls")));
    tool("scontrol",
         "echo 'JobId=4242 JobName=x'; echo '   JobState=CANCELLED Reason=None ExitCode=0:0'");
    // Slurm 22.05's scancel -v: a --state filter that matches nothing is an error line with exit
    // status 0; what it did is a verbose line.
    tool("scancel",
         "case \"$*\" in *--state=RUNNING*) echo 'scancel: error: No active jobs match ALL job "
         "filters, including: state=RUNNING ' >&2;; *--state=PENDING*) echo 'scancel: "
         "Terminating job 4242' >&2;; esac");
    tool("sacct", "echo 'sacct: error: accounting storage is disabled' >&2; exit 1");
    RunController c;
    c.setWorkerProgram(ddpdesk::test::fakeWorker());
    QSignalSpy status(&c, &RunController::launcherStatusChanged);
    QString error;
    QVERIFY2(c.start(spec("pending"), &error), qPrintable(error));
    c.slurmJob()->setPollInterval(100);
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(), QStringLiteral("job 4242 pending (Priority)"),
                              30000);
    QCOMPARE(c.state(), State::Starting);
    const QJsonObject record = [&] {
      QFile f(tmp.filePath("pending/slurm.json"));
      return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object()
                                         : QJsonObject();
    }();
    QCOMPARE(record.value("job_id").toString(), QStringLiteral("4242"));
    QVERIFY(QFileInfo::exists(tmp.filePath("pending/job.sbatch")));
    c.stop();
    QCOMPARE(c.state(), State::Stopping);
    QTRY_COMPARE_WITH_TIMEOUT(c.state(), State::Stopped, 30000);
    // A signal for a running job first; the cancel only for a pending one (squeue polls may come
    // between). Never a signal to the pending job: scancel retries that for 30 s.
    const qsizetype signalled =
        calls().indexOf("\nscancel -v --state=RUNNING --signal=TERM 4242\n");
    QVERIFY2(signalled > 0, qPrintable(calls()));
    QVERIFY2(calls().indexOf("\nscancel -v --state=PENDING 4242\n") > signalled,
             qPrintable(calls()));
    QCOMPARE(calls().count("--signal"), 1);
    QVERIFY2(!calls().contains("\nscancel 4242\n"), qPrintable(calls()));
    QCOMPARE(
        c.reason(),
        QStringLiteral("job 4242 was cancelled before its ranks started: nothing was trained"));
    QVERIFY(calls().contains("scontrol show job 4242"));
    const auto st = RunDirectory::readStatus(tmp.filePath("pending"));
    QVERIFY(st);
    QCOMPARE(st->state, QStringLiteral("Stopped"));
  }

  // The last poll said pending, the job has started since (ddpdesk slow to poll under load): the
  // stop must signal it, not cancel it (the ranks would die without a checkpoint).
  void stopAfterStaleStateSignals() {
    tool("sbatch", "echo 4243");
    tool("squeue", QStringLiteral("grep -q scancel '%1' || echo 'PENDING|Priority|'")
                       .arg(tmp.filePath("calls")));
    tool("scontrol",
         "echo 'JobId=4243 JobName=x'; echo '   JobState=COMPLETED Reason=None ExitCode=0:0'");
    // Running by now: the signal is taken.
    tool("scancel",
         "case \"$*\" in *--state=RUNNING*) echo 'scancel: Signal 15 to job 4243' >&2;; esac");
    tool("sacct", "exit 1");
    RunController c;
    c.setWorkerProgram(ddpdesk::test::fakeWorker());
    QString error;
    QVERIFY2(c.start(spec("stale"), &error), qPrintable(error));
    c.slurmJob()->setPollInterval(100);
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(), QStringLiteral("job 4243 pending (Priority)"),
                              30000);
    c.stop();
    QVERIFY(QFileInfo::exists(tmp.filePath("stale/stop-requested")));
    QTRY_COMPARE_WITH_TIMEOUT(c.state(), State::Stopped, 30000);
    QVERIFY2(calls().contains("\nscancel -v --state=RUNNING --signal=TERM 4243\n"),
             qPrintable(calls()));
    QVERIFY2(!calls().contains("scancel 4243") && !calls().contains("--state=PENDING"),
             qPrintable(calls()));
    // The next job in this directory must not find the stop.
    RunSpec again = spec("stale");
    again.resume = tmp.filePath("stale").toStdString();
    RunController d;
    d.setWorkerProgram(ddpdesk::test::fakeWorker());
    QVERIFY2(d.start(again, &error), qPrintable(error));
    QVERIFY(!QFileInfo::exists(tmp.filePath("stale/stop-requested")));
    d.kill();
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(d.state()), 30000);
  }

  // Pending when the signal was asked for, started before the cancel: neither scancel acts, so
  // the signal is asked for once more, and that one reaches the ranks.
  void jobStartingBetweenTheTwoAsksIsSignalled() {
    tool("sbatch", "echo 4244");
    // Pending until the first scancel, running from then on (it started between the asks), and
    // gone (completed) only once the test has seen the signal sent: a poll of the queue, however
    // late under load, never ends the job before the second ask's answer is taken.
    tool("squeue", QStringLiteral("if [ -e '%2' ]; then :; "
                                  "elif grep -q scancel '%1'; then echo 'RUNNING|None|node1'; "
                                  "else echo 'PENDING|Priority|'; fi")
                       .arg(tmp.filePath("calls"), tmp.filePath("job-done")));
    tool("scontrol",
         "echo 'JobId=4244 JobName=x'; echo '   JobState=COMPLETED Reason=None ExitCode=0:0'");
    tool("scancel", QStringLiteral("if [ \"$(grep -c -- --state=RUNNING '%1')\" -ge 2 ]; then "
                                   "echo 'scancel: Signal 15 to job 4244' >&2; else echo "
                                   "'scancel: error: No active jobs match ALL job filters' >&2; fi")
                        .arg(tmp.filePath("calls")));
    tool("sacct", "exit 1");
    RunController c;
    c.setWorkerProgram(ddpdesk::test::fakeWorker());
    QString error;
    QVERIFY2(c.start(spec("between"), &error), qPrintable(error));
    c.slurmJob()->setPollInterval(100);
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(), QStringLiteral("job 4244 pending (Priority)"),
                              30000);
    QSignalSpy sent(c.slurmJob(), &SlurmJob::stopSent);
    QSignalSpy warned(c.slurmJob(), &SlurmJob::warning);
    c.stop();
    QTRY_VERIFY_WITH_TIMEOUT(sent.size() == 1 || !warned.isEmpty(), 30000);
    QVERIFY2(warned.isEmpty(), qPrintable(warned.value(0).value(0).toString() + "\n" + calls()));
    QCOMPARE(sent.size(), 1);
    QCOMPARE(sent.at(0).at(0).toBool(), false);  // signalled, not cancelled
    QFile done(tmp.filePath("job-done"));        // the signalled job ends
    QVERIFY(done.open(QIODevice::WriteOnly));
    done.close();
    QCOMPARE(calls().count("scancel -v --state=RUNNING --signal=TERM 4244\n"), 2);
    QCOMPARE(calls().count("scancel -v --state=PENDING 4244\n"), 1);
    QTRY_COMPARE_WITH_TIMEOUT(c.state(), State::Stopped, 30000);
  }

  // A Slurm spec goes through the pre-start checks (the queue's and headless's): sbatch
  // --test-only on its script, whose refusal is the one line; nothing is written or submitted.
  void preStartCheckAsksSbatch() {
    tool("sbatch",
         "case \"$1\" in --test-only) echo 'sbatch: error: Invalid partition name specified' "
         ">&2; exit 1;; esac; echo 4244");
    RunSpec s = spec("checked");
    s.slurm_partition = "nosuch";
    QVERIFY(needsPreStartCheck(s));
    PreStartCheck check;
    QSignalSpy done(&check, &PreStartCheck::finished);
    check.start(s, ddpdesk::test::fakeWorker());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30000);
    QCOMPARE(done.at(0).at(0).toString(),
             QStringLiteral("sbatch: error: Invalid partition name specified"));
    QCOMPARE(checkBeforeStartNow(s, ddpdesk::test::fakeWorker()).problem,
             QStringLiteral("sbatch: error: Invalid partition name specified"));
    QVERIFY2(calls().startsWith("sbatch --test-only /"), qPrintable(calls()));
    QVERIFY2(!calls().contains("--parsable"), qPrintable(calls()));
    QVERIFY(!QFileInfo::exists(tmp.filePath("checked")));
    // Taken: no problem, and still nothing submitted.
    tool("sbatch", "exit 0");
    QVERIFY(checkBeforeStartNow(s, ddpdesk::test::fakeWorker()).ok());
  }

  void missingSbatchIsOneLine() {
    qputenv("PATH", tmp.filePath("nothing-here").toUtf8());
    RunController c;
    c.setWorkerProgram(ddpdesk::test::fakeWorker());
    QString error;
    QVERIFY(c.start(spec("no-sbatch"), &error));
    QTRY_COMPARE_WITH_TIMEOUT(c.state(), State::Failed, 30000);
    QVERIFY(c.failure().rejected);
    QCOMPARE(c.reason(),
             QStringLiteral("sbatch could not be run: not found on PATH or not executable"));
    QVERIFY(!QFileInfo::exists(tmp.filePath("no-sbatch")));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestSlurmController)
#include "test_slurm_controller.moc"

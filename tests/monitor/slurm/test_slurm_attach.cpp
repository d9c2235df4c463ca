// Following a Slurm run that ddpdesk submitted (RunController::attach of its run directory),
// under a real single-node Slurm (tests/slurm/with_slurm.sh; skipped without Slurm or root) with
// real ranks: the job is followed through Slurm's tools, not only its ranks' files — pending with
// its reason, running on its node — and Stop/Kill from the follower act on the job
// (scancel --state=RUNNING --signal=TERM with the stop file / scancel, seen through a logging
// scancel first on PATH); the follower writes nothing else. A resumed job's Log tab shows only its
// own output: the earlier job's rank-N.log is moved to logs-before-<time>/ before the new job is
// submitted, so the controller never reads it (a marker line in it would reach logLine otherwise).
// A job that has ended is reported with its outcome when followed afterwards.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_controller.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_run_files.h"

using namespace ddpdesk;
using State = RunController::State;

namespace {

constexpr int kLong = 120000;  // a job start on a busy two-core machine
const char kMarker[] = "a line of the earlier job's output";

// Every line a controller hands to the Log tab.
struct LogLines {
  QStringList lines;
  explicit LogLines(RunController& c) {
    QObject::connect(&c, &RunController::logLine, &c, [this](int rank, bool, const QString& line) {
      lines << QStringLiteral("%1: %2").arg(rank).arg(line);
    });
  }
};

}  // namespace

class TestSlurmAttach : public QObject {
  Q_OBJECT
  QTemporaryDir tmp{QDir::tempPath() + QStringLiteral("/ddpdesk-slurm-attach-XXXXXX")};
  QByteArray savedPath = qgetenv("PATH");
  QString run;

  QString calls() const {
    QFile f(tmp.filePath("calls"));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
  }
  RunSpec spec() const {
    RunSpec s;
    s.task = "seed";
    s.dataset_size = 400;
    s.batch_size = 4;
    s.epochs = 20;
    s.system_interval = 0;
    s.launcher = "slurm";
    s.slurm_nodes = 1;
    s.slurm_tasks_per_node = 2;
    s.run_dir = run.toStdString();
    return s;
  }
  static void scontrol(const QStringList& args) {
    QCOMPARE(QProcess::execute(QStringLiteral("scontrol"), args), 0);
  }

 private Q_SLOTS:
  void initTestCase() {
    if (qEnvironmentVariableIsEmpty("SLURM_CONF")) QSKIP("not under tests/slurm/with_slurm.sh");
    if (!DDPDESK_FAULTS_BUILT) QSKIP("built without DDPDESK_FAULT_INJECTION (a slowed rank)");
    QVERIFY(tmp.isValid());
    run = tmp.filePath("run");
    // scancel as Slurm has it, each call logged first.
    QDir().mkpath(tmp.filePath("bin"));
    QFile f(tmp.filePath("bin/scancel"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QStringLiteral("#!/bin/sh\necho \"scancel $*\" >>'%1'\nexec /usr/bin/scancel \"$@\"\n")
                .arg(tmp.filePath("calls"))
                .toUtf8());
    f.close();
    f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    qputenv("PATH", (tmp.filePath("bin") + ":" + savedPath).toUtf8());
    // The ranks get the submitting process's environment (sbatch --export=ALL): rank 0 is slowed
    // so a run lasts long enough to be stopped in its middle.
    qputenv("DDPDESK_FAULT_SLOW_RANK", "0:60");
    qputenv("OMP_NUM_THREADS", "1");
    test::useScratchHome(tmp);
  }
  void cleanupTestCase() {
    qputenv("PATH", savedPath);
    QProcess::execute(QStringLiteral("scancel"), {QStringLiteral("--user=root")});
  }

  // Submitted held, the submitting controller gone; the follower shows the job pending with its
  // reason, then running once released, and its Stop signals the job's steps.
  void followsAndStopsTheJob() {
    QString error, job;
    {
      RunSpec s = spec();
      s.slurm_extra = "--hold";
      RunController submitter;
      submitter.setWorkerProgram(QStringLiteral(DDPDESK_REAL_WORKER));
      QVERIFY2(submitter.start(s, &error), qPrintable(error));
      QTRY_VERIFY_WITH_TIMEOUT(submitter.launcherStatus().contains("pending"), kLong);
      job = submitter.slurmJob()->jobId();
    }  // the job goes on without it
    RunController c;
    QVERIFY2(c.attach(run, &error), qPrintable(error));
    QVERIFY(c.isAttached());
    QVERIFY(c.isSlurm());
    QCOMPARE(c.slurmJob()->jobId(), job);
    QTRY_COMPARE_WITH_TIMEOUT(c.launcherStatus(),
                              QStringLiteral("job %1 pending (JobHeldUser)").arg(job), kLong);
    QCOMPARE(c.state(), State::Starting);
    scontrol({QStringLiteral("release"), job});
    QTRY_COMPARE_WITH_TIMEOUT(c.state(), State::Running, kLong);
    QTRY_VERIFY_WITH_TIMEOUT(
        c.launcherStatus().startsWith(QStringLiteral("job %1 running on ").arg(job)), kLong);
    QTRY_VERIFY_WITH_TIMEOUT(c.store()->progress().step >= 3, kLong);
    c.stop();
    QCOMPARE(c.state(), State::Stopping);
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c.state()), kLong);
    QCOMPARE(c.state(), State::Stopped);
    QVERIFY2(c.reason().startsWith("stopped by the user at step "), qPrintable(c.reason()));
    QVERIFY2(
        calls().contains(QStringLiteral("scancel -v --state=RUNNING --signal=TERM %1\n").arg(job)),
        qPrintable(calls()));
    QVERIFY(QFileInfo::exists(run + "/stop-requested"));
    QVERIFY(!QDir(run + "/checkpoints").entryList({"step-*.pt"}).isEmpty());
    QVERIFY2(c.launcherStatus().startsWith(QStringLiteral("job %1 completed").arg(job)),
             qPrintable(c.launcherStatus()));
    // A follower writes no ending of its own into the directory.
    QVERIFY(!QFileInfo::exists(run + "/status.json"));
  }

  // The stopped run resumed as a new job: its Log tab never shows the earlier job's output, which
  // is kept in logs-before-<time>/. Followed afresh and killed from the follower: scancel.
  void resumeShowsOnlyItsOwnOutputAndKillCancels() {
    QFile log(run + "/rank-0.log");
    QVERIFY2(log.open(QIODevice::Append), "no rank-0.log from the first job");
    log.write(QByteArray(kMarker) + '\n');
    log.close();
    const auto first = readSlurmRecord(run);
    QVERIFY(first);
    QString error, job;
    QStringList submitterLines;
    {
      RunSpec s = spec();
      s.resume = run.toStdString();
      RunController submitter;
      LogLines lines(submitter);
      submitter.setWorkerProgram(QStringLiteral(DDPDESK_REAL_WORKER));
      QVERIFY2(submitter.start(s, &error), qPrintable(error));
      QTRY_COMPARE_WITH_TIMEOUT(submitter.state(), State::Running, kLong);
      QTRY_VERIFY_WITH_TIMEOUT(!lines.lines.isEmpty(), kLong);
      job = submitter.slurmJob()->jobId();
      submitterLines = lines.lines;
    }
    QVERIFY(job != first->jobId);
    QVERIFY2(!submitterLines.filter(kMarker).size(), qPrintable(submitterLines.join('\n')));
    const QStringList aside = QDir(run).entryList({"logs-before-*"}, QDir::Dirs);
    QCOMPARE(aside.size(), 1);
    QFile kept(run + "/" + aside.first() + "/rank-0.log");
    QVERIFY(kept.open(QIODevice::ReadOnly));
    QVERIFY(kept.readAll().contains(kMarker));

    RunController c;
    LogLines lines(c);
    QVERIFY2(c.attach(run, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(c.state(), State::Running, kLong);
    QTRY_VERIFY_WITH_TIMEOUT(!lines.lines.isEmpty(), kLong);
    c.kill();
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c.state()), kLong);
    QCOMPARE(c.state(), State::Stopped);
    QVERIFY2(c.reason().startsWith(QStringLiteral("job %1 was cancelled by the user").arg(job)),
             qPrintable(c.reason()));
    QVERIFY2(calls().contains(QStringLiteral("scancel %1\n").arg(job)), qPrintable(calls()));
    QVERIFY2(!lines.lines.filter(kMarker).size(), qPrintable(lines.lines.join('\n')));

    // Followed after its end: the job's outcome (cancelled, and not from this follower).
    RunController after;
    QVERIFY2(after.attach(run, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(after.state()), kLong);
    QCOMPARE(after.state(), State::Failed);
    QVERIFY2(after.reason().startsWith(QStringLiteral("job %1 cancelled").arg(job)) &&
                 after.reason().endsWith(QStringLiteral(" (not from this monitor)")),
             qPrintable(after.reason()));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestSlurmAttach)
#include "test_slurm_attach.moc"

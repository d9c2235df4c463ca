// The fault-table row "kill the monitor", end to end with the real ddpdesk-worker: `ddpdesk
// --headless` is killed with SIGKILL mid-run; its two ranks get their parent-death signal, agree
// on a step, checkpoint and exit 0; the run directory says so (each rank's exit record, and the
// history's status built from them); resuming that directory finishes the run. Only built with
// the engine.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

#include "exit_record.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = kRealWorkerTimeoutMs;
}

class TestKilledMonitor : public QObject {
  Q_OBJECT
  QTemporaryDir data;

  // Reads the monitor's stderr until it named the run directory and the ranks' pids.
  static bool waitForStart(QProcess& p, QString* dir, QList<qint64>* pids) {
    // Headless names the directory on one line, then the pids on the next.
    QString err;
    const auto m =
        waitForStderr(p,
                      QRegularExpression(QStringLiteral("run directory (\\S+)\n.*pids ([0-9 ]+)\n"),
                                         QRegularExpression::DotMatchesEverythingOption),
                      &err, kTimeout);
    if (!m.hasMatch()) return false;
    *dir = m.captured(1);
    *pids = pidList(m.captured(2));
    return true;
  }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(data.isValid()); }

  void killedMonitorLeavesAResumableRunThatSaysWhatHappened() {
    // 1,000 steps, each at least 3 ms (rank 0's data loading slowed): seconds to be killed in,
    // and a resume that finishes soon.
    const QStringList spec = {"--task", "seed",         "--nproc", "2",        "--dataset-size",
                              "4000",   "--batch-size", "4",       "--epochs", "2"};
    QProcessEnvironment slow;
    slow.insert(QStringLiteral("DDPDESK_FAULT_SLOW_RANK"), QStringLiteral("0:3"));
    auto monitor = startRealHeadless(data.path(), spec, slow);
    QString dir;
    QList<qint64> pids;
    QVERIFY(waitForStart(*monitor, &dir, &pids));
    QCOMPARE(pids.size(), 2);
    QTRY_VERIFY_WITH_TIMEOUT(bothRanksStepping(RunDirectory::metricsPath(dir)), kTimeout);

    ::kill(pid_t(monitor->processId()), SIGKILL);
    QVERIFY(monitor->waitForFinished(kTimeout));
    QTRY_VERIFY_WITH_TIMEOUT(notRunning(pids[0]) && notRunning(pids[1]), kTimeout);

    // Each rank's own account: stopped because the monitor died, at one step, rank 0 holding
    // the checkpoint of that step.
    std::int64_t step = -1;
    for (int rank = 0; rank < 2; ++rank) {
      const auto rec = read_exit_record(exit_record_path(dir.toStdString(), rank));
      QVERIFY2(rec, qPrintable(QStringLiteral("rank %1 wrote no exit record").arg(rank)));
      QCOMPARE(rec->outcome, std::string("stopped"));
      QCOMPARE(rec->exit_code, 0);
      QVERIFY(rec->monitor_gone);
      QCOMPARE(rec->reason, std::string("stopped because the monitor died"));
      QCOMPARE(rec->pid, long(pids[rank]));
      if (step < 0) step = rec->step;
      QCOMPARE(rec->step, step);
    }
    QVERIFY(step > 0);
    const auto rank0 = read_exit_record(exit_record_path(dir.toStdString(), 0));
    QVERIFY(QFile::exists(QString::fromStdString(rank0->checkpoint)));
    QVERIFY(!QFile::exists(RunDirectory::statusPath(dir)));  // the monitor never got to it

    // The history's view of it.
    const auto record = RunDirectory::readRecord(dir);
    QVERIFY(record && record->status);
    QCOMPARE(record->status->state, QStringLiteral("Stopped"));
    QCOMPARE(record->status->lastStep, step);
    QVERIFY(record->status->reason.contains(QLatin1String("monitor died")));
    QCOMPARE(record->checkpoints.size(), 1);

    // And it resumes to the end in the same directory.
    auto again = startRealHeadless(data.path(), {"--resume", dir}, slow);
    QVERIFY(again->waitForFinished(kTimeout));
    QCOMPARE(again->exitCode(), 0);
    const auto status = RunDirectory::readStatus(dir);
    QVERIFY(status);
    QCOMPARE(status->state, QStringLiteral("Finished"));
    QCOMPARE(status->lastStep, status->totalSteps);
    const auto done = read_exit_record(exit_record_path(dir.toStdString(), 1));
    QVERIFY(done && done->outcome == "finished" && !done->monitor_gone);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestKilledMonitor)
#include "test_killed_monitor.moc"

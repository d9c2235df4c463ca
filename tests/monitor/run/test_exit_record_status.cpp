// A run whose monitor died: the history reads the ranks' exit records (rank-N.exit.json) instead
// of status.json. Stopped together, one rank failing, one rank killed outright, all finished; no
// record saying the monitor died means no status at all; a new start forgets the old ending.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include "exit_record.h"
#include "qt_test_main.h"
#include "run/exit_record_status.h"
#include "run/run_directory.h"

using namespace ddpdesk;

class TestExitRecordStatus : public QObject {
  Q_OBJECT
  QTemporaryDir data;
  int runs = 0;

  // A run directory with spec.json for `world` ranks, as the monitor leaves it.
  QString makeRun(int world) {
    RunSpec spec;
    spec.nproc = world;
    spec.run_dir = data.filePath(QStringLiteral("run-%1").arg(++runs)).toStdString();
    RunDirectory dir;
    QString error;
    if (!dir.create(spec, &error) || !dir.writeSpec(spec, &error)) qFatal("%s", qPrintable(error));
    return dir.path();
  }
  static void writeRecord(const QString& dir, int rank, const char* outcome, qint64 step,
                          bool monitorGone, const char* reason = "", const char* ckpt = "") {
    ExitRecord r;
    r.rank = rank;
    r.world = 2;
    r.pid = 100 + rank;
    r.outcome = outcome;
    r.exit_code = std::string(outcome) == "failed" ? 1 : 0;
    r.reason = reason;
    r.step = step;
    r.checkpoint = ckpt;
    r.monitor_gone = monitorGone;
    std::string error;
    QVERIFY2(write_exit_record(dir.toStdString(), r, &error), error.c_str());
  }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(data.isValid()); }

  void ranksStoppedTogetherAfterTheMonitorDied() {
    const QString dir = makeRun(2);
    writeRecord(dir, 0, "stopped", 321, true, "stopped because the monitor died",
                "/x/checkpoints/step-00000321.pt");
    writeRecord(dir, 1, "stopped", 321, true, "stopped because the monitor died");
    const auto rec = RunDirectory::readRecord(dir);
    QVERIFY(rec && rec->status);
    QCOMPARE(rec->status->state, QStringLiteral("Stopped"));
    QCOMPARE(rec->status->lastStep, 321);
    QVERIFY(rec->status->reason.contains(QLatin1String("monitor died")));
    QVERIFY(rec->status->reason.contains(QLatin1String("step-00000321.pt")));
    QCOMPARE(rec->status->exitCodes, (QList<int>{0, 0}));
  }

  void aRankWithoutARecordWasKilled() {
    const QString dir = makeRun(3);
    writeRecord(dir, 0, "failed", 50, true, "rank 2 (pid 9) died");
    writeRecord(dir, 1, "failed", 50, true, "rank 2 (pid 9) died");
    const auto s = statusFromExitRecords(dir, 3);
    QVERIFY(s);
    QCOMPARE(s->state, QStringLiteral("Failed"));
    QVERIFY(s->reason.contains(QLatin1String("rank(s) 2 left no exit record")));
    QVERIFY(s->reason.contains(QLatin1String("rank 0: rank 2 (pid 9) died")));
    QCOMPARE(s->exitCodes, (QList<int>{1, 1, -1}));
  }

  void allFinishedIsFinished() {
    const QString dir = makeRun(2);
    writeRecord(dir, 0, "finished", 90, true);
    writeRecord(dir, 1, "finished", 90, false);  // it exited before the monitor died
    const auto s = statusFromExitRecords(dir, 2);
    QVERIFY(s);
    QCOMPARE(s->state, QStringLiteral("Finished"));
    QCOMPARE(s->lastStep, 90);
  }

  void withoutAMonitorDeathTheRecordsSayNothing() {
    // A monitor alive (or about to write status.json) owns the ending.
    const QString dir = makeRun(2);
    writeRecord(dir, 0, "stopped", 10, false);
    writeRecord(dir, 1, "stopped", 10, false);
    QVERIFY(!statusFromExitRecords(dir, 2));
    QVERIFY(!RunDirectory::readRecord(dir)->status);
  }

  void statusJsonWinsOverRecords() {
    const QString dir = makeRun(2);
    writeRecord(dir, 0, "stopped", 10, true);
    RunDirectory d;
    QVERIFY(d.open(dir));
    RunStatus s;
    s.state = QStringLiteral("Failed");
    s.reason = QStringLiteral("from the monitor");
    QVERIFY(d.writeStatus(s));
    QCOMPARE(RunDirectory::readRecord(dir)->status->reason, QStringLiteral("from the monitor"));
  }

  void aNewStartForgetsThePreviousEnding() {
    const QString dir = makeRun(2);
    writeRecord(dir, 0, "stopped", 10, true);
    writeRecord(dir, 1, "stopped", 10, true);
    writeRecord(dir, 5, "stopped", 10, true);  // from an earlier run with more ranks
    RunDirectory d;
    QVERIFY(d.open(dir));
    QVERIFY(d.writeStatus(RunStatus{}));
    d.forgetEnding();
    QVERIFY(!QFile::exists(RunDirectory::statusPath(dir)));
    QCOMPARE(QDir(dir).entryList({QStringLiteral("rank-*.exit.json")}), QStringList());
    QVERIFY(QFile::exists(RunDirectory::specPath(dir)));  // the rest stays
    QVERIFY(!RunDirectory::readRecord(dir)->status);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestExitRecordStatus)
#include "test_exit_record_status.moc"

// RunDirectory: naming under XDG_DATA_HOME, spec/status files, metrics appends, history listing.
#include <QDateTime>
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "qt_test_main.h"
#include "run/run_directory.h"

using namespace ddpdesk;

class TestRunDirectory : public QObject {
  Q_OBJECT
  QTemporaryDir data;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(data.isValid());
    qputenv("XDG_DATA_HOME", data.path().toUtf8());
  }

  void rootFollowsXdgDataHome() {
    QCOMPARE(RunDirectory::runsRoot(), data.path() + QStringLiteral("/ddpdesk/runs"));
  }

  void newPathsAreStampedNamedAndUnique() {
    RunSpec spec;
    spec.task = "fmnist-mlp";
    const QDateTime t(QDate(2026, 3, 4), QTime(5, 6, 7));
    const QString root = data.filePath(QStringLiteral("names"));
    QCOMPARE(RunDirectory::newRunPath(spec, t, root), root + "/20260304-050607-fmnist-mlp");
    spec.name = "my run: v2 ü";
    const QString p = RunDirectory::newRunPath(spec, t, root);
    QCOMPARE(p, root + "/20260304-050607-my_run__v2__");
    QVERIFY(QDir().mkpath(p));
    QCOMPARE(RunDirectory::newRunPath(spec, t, root), p + "-2");
  }

  void createWritesSpecAndMetrics() {
    RunSpec spec;
    spec.nproc = 3;
    spec.name = "alpha";
    RunDirectory dir;
    QString error;
    QVERIFY2(dir.create(spec, &error), qPrintable(error));
    QVERIFY(dir.path().startsWith(RunDirectory::runsRoot() + '/'));
    QVERIFY(dir.path().endsWith(QLatin1String("-alpha")));
    QVERIFY(dir.writeSpec(spec, &error));
    QVERIFY(dir.appendMetrics("{\"a\":1}\n"));
    QVERIFY(dir.appendMetrics("{\"b\":2}\n"));
    QFile m(RunDirectory::metricsPath(dir.path()));
    QVERIFY(m.open(QIODevice::ReadOnly));
    QCOMPARE(m.readAll(), QByteArray("{\"a\":1}\n{\"b\":2}\n"));  // unbuffered: already there

    auto rec = RunDirectory::readRecord(dir.path());
    QVERIFY(rec);
    QVERIFY(rec->specValid);
    QCOMPARE(rec->spec.nproc, 3);
    QVERIFY(!rec->status);  // not ended yet
  }

  void specRunDirIsUsedAsIs() {
    RunSpec spec;
    spec.run_dir = data.filePath(QStringLiteral("explicit/dir")).toStdString();
    RunDirectory dir;
    QVERIFY(dir.create(spec));
    QCOMPARE(dir.path(), data.filePath(QStringLiteral("explicit/dir")));
  }

  void statusRoundTrips() {
    RunDirectory dir;
    QVERIFY(dir.open(data.filePath(QStringLiteral("status-run"))));
    RunStatus s;
    s.state = QStringLiteral("Failed");
    s.reason = QStringLiteral("rank 1 exited with code 3\nlast lines");
    s.exitCodes = {0, 3};
    s.termSignals = {15, 0};
    s.startedAt = QDateTime::currentDateTime().addSecs(-5);
    s.endedAt = QDateTime::currentDateTime();
    s.lastStep = 42;
    s.totalSteps = 100;
    s.lastLoss = std::nan("");
    s.malformedLines = 7;
    s.ignoredLines = 11;
    s.unknownFields = 13;
    s.droppedConnections = 2;
    QVERIFY(dir.writeStatus(s));
    auto r = RunDirectory::readStatus(dir.path());
    QVERIFY(r);
    QCOMPARE(r->state, s.state);
    QCOMPARE(r->reason, s.reason);
    QCOMPARE(r->exitCodes, s.exitCodes);
    QCOMPARE(r->termSignals, s.termSignals);
    QCOMPARE(r->lastStep, 42);
    QCOMPARE(r->totalSteps, 100);
    QVERIFY(std::isnan(r->lastLoss));
    QCOMPARE(r->startedAt.toSecsSinceEpoch(), s.startedAt.toSecsSinceEpoch());
    QCOMPARE(r->malformedLines, 7);
    QCOMPARE(r->ignoredLines, 11);
    QCOMPARE(r->unknownFields, 13);
    QCOMPARE(r->droppedConnections, 2);
  }

  // A monitor killed mid-write left half a line: the next run's first message is a line of its
  // own, the half one stays one malformed line, and the run counts it.
  void aHalfLineIsEndedBeforeAppending() {
    const QString path = data.filePath(QStringLiteral("half"));
    QVERIFY(QDir().mkpath(path));
    QFile f(RunDirectory::metricsPath(path));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"type\":\"step\",\"rank\":0}\n{\"type\":");
    f.close();
    RunDirectory dir;
    QVERIFY(dir.open(path));
    QCOMPARE(dir.endedHalfLines(), 1);
    QVERIFY(dir.appendMetrics("{\"type\":\"hello\",\"rank\":0}\n"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("{\"type\":\"step\",\"rank\":0}\n{\"type\":\n"
                                     "{\"type\":\"hello\",\"rank\":0}\n"));
    f.close();
    dir.close();
    // A file that ends in a whole line is left as it is.
    QVERIFY(dir.open(path));
    QCOMPARE(dir.endedHalfLines(), 0);
  }

  // Why a run directory cannot be made, in the one line that says it cannot.
  void aRunDirectoryThatCannotBeMadeSaysWhy() {
    const QString file = data.filePath(QStringLiteral("a-file"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const QString tooLong = data.filePath(QString(260, QLatin1Char('n')));
    const QList<QPair<QString, QString>> cases = {
        {file, QStringLiteral("Not a directory")},
        {file + "/run", QStringLiteral("Not a directory")},
        {tooLong, QStringLiteral("File name too long")}};
    for (const auto& [path, why] : cases) {
      RunDirectory dir;
      QString error;
      QVERIFY(!dir.open(path, &error));
      QCOMPARE(error, QStringLiteral("cannot create run directory %1: %2").arg(path, why));
      QCOMPARE(RunDirectory::unusableReason(path), QStringLiteral("cannot create it: ") + why);
    }
    QCOMPARE(RunDirectory::unusableReason(data.filePath(QStringLiteral("new/run"))), QString());
    QCOMPARE(RunDirectory::unusableReason(data.path()), QString());
  }

  void monitorLogKeepsOneTimestampedLinePerEvent() {
    RunDirectory dir;
    QVERIFY(dir.open(data.filePath(QStringLiteral("log-run"))));
    dir.logEvent(QStringLiteral("starting 2 rank(s)"));
    dir.logEvent(QStringLiteral("run Failed: rank 1 died\nlast lines"));
    QFile f(RunDirectory::monitorLogPath(dir.path()));
    QVERIFY(f.open(QIODevice::ReadOnly));  // readable while still open for writing
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 2);
    QVERIFY(lines[0].endsWith(QLatin1String(" starting 2 rank(s)")));
    QVERIFY(QDateTime::fromString(lines[0].section(' ', 0, 0), Qt::ISODateWithMs).isValid());
    QVERIFY(lines[1].endsWith(QLatin1String("run Failed: rank 1 died | last lines")));
  }

  void listsRunsNewestFirst() {
    const QString root = data.filePath(QStringLiteral("history"));
    RunSpec spec;
    for (const char* id : {"20250101-000000-seed", "20260101-000000-seed", "20250601-000000-x"}) {
      RunDirectory d;
      QVERIFY(d.open(root + '/' + id));
      QVERIFY(d.writeSpec(spec));
    }
    QVERIFY(QDir().mkpath(root + "/not-a-run"));  // no spec.json: ignored
    QVERIFY(QDir().mkpath(root + "/20260101-000000-seed/checkpoints"));
    for (const char* name : {"step-00000010.pt", "step-00000200.pt", "notes.txt"}) {
      QFile ck(root + "/20260101-000000-seed/checkpoints/" + name);
      QVERIFY(ck.open(QIODevice::WriteOnly));
    }
    const auto runs = RunDirectory::listRuns(root);
    QCOMPARE(int(runs.size()), 3);
    QCOMPARE(runs[0].id, QStringLiteral("20260101-000000-seed"));
    QCOMPARE(runs[1].id, QStringLiteral("20250601-000000-x"));
    QCOMPARE(runs[2].id, QStringLiteral("20250101-000000-seed"));
    QCOMPARE(runs[0].created, QDateTime(QDate(2026, 1, 1), QTime(0, 0)));
    QCOMPARE(runs[0].checkpoints.size(), 2);
    QVERIFY(runs[0].checkpoints[0].endsWith(QLatin1String("checkpoints/step-00000200.pt")));
    QVERIFY(runs[1].checkpoints.isEmpty());
    QVERIFY(RunDirectory::listRuns(data.filePath(QStringLiteral("nothing-here"))).empty());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRunDirectory)
#include "test_run_directory.moc"

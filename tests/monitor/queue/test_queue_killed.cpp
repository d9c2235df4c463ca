// A queue survives a crash of the app, end to end with the real ddpdesk-worker: `ddpdesk
// --headless --queue FILE` is killed with SIGKILL while its second entry trains; the ranks get
// their parent-death signal, checkpoint and stop. (The kill follows the ranks' first steps
// within milliseconds, so it lands early in the run however fast this machine trains.) The same
// command again reads that entry back as interrupted, resumes it from its checkpoint in its own run
// directory, runs the third entry, and leaves the first one (finished before: the file says so)
// alone. Only built with the engine.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = kRealWorkerTimeoutMs;
}

class TestQueueKilled : public QObject {
  Q_OBJECT
  QTemporaryDir data;

  QJsonArray entries() const {
    QFile f(data.filePath(QStringLiteral("queue.json")));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object().value(QLatin1String("entries")).toArray();
  }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(data.isValid()); }

  void killedQueueResumesTheInterruptedRunAndRunsTheRest() {
    // One run done already, one long enough to be killed mid-way, a short one after it.
    QFile q(data.filePath(QStringLiteral("queue.json")));
    QVERIFY(q.open(QIODevice::WriteOnly));
    q.write(R"({"entries": [)"
            R"({"spec": {"task": "seed"}, "state": "finished", "run_dir": "/nowhere"},)"
            R"({"spec": {"task": "seed", "nproc": 2, "dataset_size": 1600, "batch_size": 4,)"
            R"( "epochs": 5, "system_interval": 0}},)"
            R"({"spec": {"task": "seed", "nproc": 2, "dataset_size": 64, "system_interval": 0}})"
            R"(]})");
    q.close();
    const QStringList args = {"--queue", q.fileName()};

    auto first = startRealHeadless(data.path(), args);
    QString err, dir;
    QList<qint64> pids;
    const QRegularExpression started(
        QStringLiteral("queue: run 2/3 \\(.*\\) started in (\\S+), pids ([0-9 ]+)\n"));
    if (const auto m = waitForStderr(*first, started, &err, kTimeout); m.hasMatch()) {
      dir = m.captured(1);
      pids = pidList(m.captured(2));
    }
    QVERIFY2(!dir.isEmpty(), qPrintable(err));
    QCOMPARE(pids.size(), 2);
    QVERIFY2(QTest::qWaitFor([&] { return bothRanksStepping(RunDirectory::metricsPath(dir)); },
                             kTimeout),
             "the second entry's ranks never both stepped");
    ::kill(pid_t(first->processId()), SIGKILL);
    QVERIFY(first->waitForFinished(kTimeout));
    QTRY_VERIFY_WITH_TIMEOUT(notRunning(pids[0]) && notRunning(pids[1]), kTimeout);

    // What the killed app left: the second entry running, the first finished, the third queued.
    const QJsonArray left = entries();
    QCOMPARE(left[0].toObject().value(QLatin1String("state")).toString(),
             QStringLiteral("finished"));
    QCOMPARE(left[1].toObject().value(QLatin1String("state")).toString(),
             QStringLiteral("running"));
    QCOMPARE(left[2].toObject().value(QLatin1String("state")).toString(), QStringLiteral("queued"));
    const auto cut = RunDirectory::readRecord(dir);
    QVERIFY(cut && cut->status);
    QCOMPARE(cut->status->state, QStringLiteral("Stopped"));  // from the ranks' exit records
    QCOMPARE(cut->checkpoints.size(), 1);
    const qint64 cutAt = cut->status->lastStep;
    QVERIFY(cutAt > 0);

    auto again = startRealHeadless(data.path(), args);
    QVERIFY(again->waitForFinished(kTimeout));
    const QString out = QString::fromUtf8(again->readAllStandardError());
    QCOMPARE(again->exitCode(), 0);
    QVERIFY2(out.contains(
                 QStringLiteral(
                     "queue: run 2/3 (seed, 2 rank(s), batch 4 x accum 1, lr 0.001, 5 epoch(s)) "
                     "resumed in %1")
                     .arg(dir)),
             qPrintable(out));
    QVERIFY2(!out.contains(QLatin1String("run 1/3")), qPrintable(out));
    QVERIFY2(out.contains(QLatin1String("3 entries, 2 to run")), qPrintable(out));
    const QJsonArray done = entries();
    for (int i = 0; i < 3; ++i)
      QCOMPARE(done[i].toObject().value(QLatin1String("state")).toString(),
               QStringLiteral("finished"));
    QCOMPARE(done[1].toObject().value(QLatin1String("run_dir")).toString(), dir);
    // The interrupted run ended where an uninterrupted one would, in its own directory.
    const auto status = RunDirectory::readStatus(dir);
    QVERIFY(status);
    QCOMPARE(status->state, QStringLiteral("Finished"));
    QCOMPARE(status->lastStep, status->totalSteps);
    QVERIFY(status->totalSteps > cutAt);
    QCOMPARE(status->totalSteps, qint64(5 * 1600 / 8));
    QCOMPARE(done[0].toObject().value(QLatin1String("run_dir")).toString(),
             QStringLiteral("/nowhere"));
    const QString thirdDir = done[2].toObject().value(QLatin1String("run_dir")).toString();
    QCOMPARE(RunDirectory::readStatus(thirdDir)->state, QStringLiteral("Finished"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestQueueKilled)
#include "test_queue_killed.moc"

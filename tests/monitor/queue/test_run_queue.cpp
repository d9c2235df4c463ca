// RunQueue driving the fake worker through a real RunController: entries run one after another,
// a failed run does not stop the queue unless asked, a user stop pauses it, reordering, removal
// and pausing are kept in the file, and an entry the file says was running (the app died) reads
// back as interrupted and continues from its checkpoint in its own run directory. Entries go
// through the pre-start checks: one they rule out fails with their line and spawns nothing.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "queue/run_queue.h"
#include "run/run_controller.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using EntryState = QueueEntry::State;

namespace {
constexpr int kRunTimeout = 60000;  // a loaded 2-core CI box can be very slow; never a timing test
}

class TestRunQueue : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> data;
  std::unique_ptr<RunController> c;
  std::unique_ptr<RunQueue> q;

  QString queuePath() const { return data->filePath(QStringLiteral("queue.json")); }
  void make(std::initializer_list<std::pair<const char*, QString>> env) {
    c = std::make_unique<RunController>();
    c->setWorkerProgram(fakeWorker());
    c->setExtraEnvironment(fakeEnv(env));
    q = std::make_unique<RunQueue>(c.get());
  }
  // A spec the fake worker fails at once: resuming a checkpoint that does not exist.
  RunSpec failing() const {
    RunSpec s = fakeSpec(1);
    s.resume = data->filePath(QStringLiteral("no-such-run")).toStdString();
    return s;
  }
  QList<EntryState> states() const {
    QList<EntryState> out;
    for (const auto& e : q->entries()) out << e.state;
    return out;
  }
  QJsonObject file() const {
    QFile f(queuePath());
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object()
                                       : QJsonObject();
  }

 private Q_SLOTS:
  void init() {
    data = std::make_unique<QTemporaryDir>();
    QVERIFY(data->isValid());
    qputenv("XDG_DATA_HOME", data->path().toUtf8());
  }
  void cleanup() {
    q.reset();
    c.reset();
    data.reset();
  }

  void runsEntriesInTurnAndAFailureDoesNotStopTheQueue() {
    make({{"FAKE_STEPS", "6"}});
    QVERIFY(q->load(queuePath()));
    const int a = q->add(fakeSpec(2));
    const int b = q->add(failing());
    const int d = q->add(fakeSpec(1));
    QSignalSpy started(q.get(), &RunQueue::entryStarted);
    QSignalSpy ended(q.get(), &RunQueue::entryEnded);
    QSignalSpy idle(q.get(), &RunQueue::idle);
    q->startNext();
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 3 && idle.count() > 0, kRunTimeout);
    QCOMPARE(states(),
             (QList<EntryState>{EntryState::Finished, EntryState::Failed, EntryState::Finished}));
    // One at a time, in order: each start comes after the previous end.
    QCOMPARE(started.count(), 3);
    QCOMPARE(started.at(0).at(0).toInt(), a);
    QCOMPARE(started.at(1).at(0).toInt(), b);
    QCOMPARE(started.at(2).at(0).toInt(), d);
    QVERIFY(q->entries()[1].reason.contains(QLatin1String("rank 0 exited with code 2")));
    QVERIFY(q->entries()[0].runDir != q->entries()[2].runDir);
    QCOMPARE(RunDirectory::readStatus(q->entries()[2].runDir)->state, QStringLiteral("Finished"));
    QVERIFY(!q->isPaused());
    // The file says the same.
    const QJsonArray entries = file().value(QLatin1String("entries")).toArray();
    QCOMPARE(entries.size(), 3);
    QCOMPARE(entries[1].toObject().value(QLatin1String("state")).toString(),
             QStringLiteral("failed"));
    QCOMPARE(entries[2].toObject().value(QLatin1String("run_dir")).toString(),
             q->entries()[2].runDir);
  }

  void entriesTheChecksRuleOutFailWithoutARank() {
    // The checks a run from the form or headless goes through (pre_start_check.h) also stand
    // before a queued run: a user task whose model file is missing (the dry run names it) and a
    // CUDA run on a machine whose probe finds no GPU fail with that line, and none of their
    // ranks is spawned; the queue goes on to the next entry.
    make({{"FAKE_STEPS", "4"}});
    QVERIFY(q->load(queuePath()));
    RunSpec user = fakeSpec(2);
    user.task = "script";
    user.model = data->filePath(QStringLiteral("missing.pt")).toStdString();
    user.train_data = writeFile(QDir(data->path()), QStringLiteral("train.pt")).toStdString();
    RunSpec cuda = fakeSpec(1);
    cuda.device = "cuda";  // the fake worker's probe finds none (FAKE_GPUS unset)
    const int a = q->add(user);
    const int b = q->add(cuda);
    const int d = q->add(fakeSpec(1));
    QSignalSpy started(q.get(), &RunQueue::entryStarted);
    QSignalSpy ended(q.get(), &RunQueue::entryEnded);
    QSignalSpy idle(q.get(), &RunQueue::idle);
    q->startNext();
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 3 && idle.count() > 0, kRunTimeout);
    QCOMPARE(states(),
             (QList<EntryState>{EntryState::Failed, EntryState::Failed, EntryState::Finished}));
    QCOMPARE(ended.at(0).at(0).toInt(), a);
    QCOMPARE(ended.at(1).at(0).toInt(), b);
    QCOMPARE(q->entries()[0].reason,
             QStringLiteral("could not start: invalid --model '%1': no such file")
                 .arg(QString::fromStdString(user.model)));
    QVERIFY2(q->entries()[1].reason.startsWith(QLatin1String("could not start: invalid --")),
             qPrintable(q->entries()[1].reason));
    QVERIFY2(q->entries()[1].reason.contains(QLatin1String("GPU")),
             qPrintable(q->entries()[1].reason));
    // Only the last one started: no run directory, no rank for the others.
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.at(0).at(0).toInt(), d);
    QVERIFY(q->entries()[0].runDir.isEmpty());
    QVERIFY(q->entries()[1].runDir.isEmpty());
    QCOMPARE(RunDirectory::listRuns().size(), std::size_t(1));
  }

  void anEntryThatPassesTheChecksStarts() {
    // The same user task with its files in place: checked, then started and run to the end.
    make({{"FAKE_STEPS", "4"}});
    QVERIFY(q->load(queuePath()));
    RunSpec user = fakeSpec(2);
    user.task = "script";
    user.model = writeFile(QDir(data->path()), QStringLiteral("model.pt")).toStdString();
    user.train_data = writeFile(QDir(data->path()), QStringLiteral("train.pt")).toStdString();
    const int a = q->add(user);
    QSignalSpy started(q.get(), &RunQueue::entryStarted);
    QSignalSpy idle(q.get(), &RunQueue::idle);
    q->startNext();
    QVERIFY(started.isEmpty());  // not before the check has answered
    QTRY_VERIFY_WITH_TIMEOUT(idle.count() > 0 && q->entries()[0].state == EntryState::Finished,
                             kRunTimeout);
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.at(0).at(0).toInt(), a);
  }

  void stopOnFailurePausesTheQueueAtTheFailedRun() {
    make({{"FAKE_STEPS", "6"}});
    QVERIFY(q->load(queuePath()));
    q->setStopOnFailure(true);
    q->add(fakeSpec(1));
    q->add(failing());
    q->add(fakeSpec(1));
    QSignalSpy idle(q.get(), &RunQueue::idle);
    q->startNext();
    // idle() comes from the queue's look for a next entry after the failure (nothing running,
    // nothing being checked): had it not paused, that look would have started the third.
    QTRY_VERIFY_WITH_TIMEOUT(idle.count() > 0 && !c->isActive() && q->currentId() < 0 &&
                                 q->entries()[1].state == EntryState::Failed,
                             kRunTimeout);
    QCOMPARE(states(),
             (QList<EntryState>{EntryState::Finished, EntryState::Failed, EntryState::Queued}));
    QVERIFY(q->isPaused());
    QCOMPARE(file().value(QLatin1String("paused")).toBool(), true);
    // Resuming the queue runs the rest.
    QSignalSpy ended(q.get(), &RunQueue::entryEnded);
    q->setPaused(false);
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kRunTimeout);
    QCOMPARE(q->entries()[2].state, EntryState::Finished);
  }

  void aUserStopPausesTheQueueAndTheStoppedRunContinuesLater() {
    // 150 steps of 200 ms: 30 s, far longer than the stop takes to arrive after step 3 however
    // loaded the machine. The runs after it take 2 ms a step.
    make({{"FAKE_STEPS", "150"}, {"FAKE_STEP_MS", "200"}});
    QVERIFY(q->load(queuePath()));
    const int first = q->add(fakeSpec(2));
    q->add(fakeSpec(1));
    q->startNext();
    QTRY_VERIFY_WITH_TIMEOUT(
        c->state() == RunController::State::Running && c->store()->progress().step >= 3,
        kRunTimeout);
    QSignalSpy idle(q.get(), &RunQueue::idle);
    c->stop();
    QTRY_VERIFY_WITH_TIMEOUT(q->entries()[0].state == EntryState::Stopped, kRunTimeout);
    // idle() comes from the queue's look for a next entry once the stopped run has ended: had it
    // not paused, that look would have started the second entry.
    QTRY_VERIFY_WITH_TIMEOUT(idle.count() > 0, kRunTimeout);
    QVERIFY(q->isPaused());
    QCOMPARE(q->entries()[1].state, EntryState::Queued);
    QVERIFY(!c->isActive());
    const QString dir = q->entries()[0].runDir;
    // Resumed: from its checkpoint, in its own directory.
    c->setExtraEnvironment(fakeEnv({{"FAKE_STEPS", "150"}, {"FAKE_STEP_MS", "2"}}));
    q->setPaused(false);
    QTRY_COMPARE_WITH_TIMEOUT(q->currentId(), first, kRunTimeout);
    QCOMPARE(c->runDirectory(), dir);
    QCOMPARE(QString::fromStdString(c->spec().resume), dir);
    QTRY_VERIFY_WITH_TIMEOUT(q->entries()[1].state == EntryState::Finished, 2 * kRunTimeout);
    QCOMPARE(q->entries()[0].state, EntryState::Finished);
    QCOMPARE(RunDirectory::readStatus(dir)->lastStep, 150);
  }

  void reorderRemoveAndPauseAreKeptInTheFile() {
    make({});
    QVERIFY(q->load(queuePath()));
    q->setPaused(true);
    const int a = q->add(fakeSpec(1));
    RunSpec two = fakeSpec(2);
    two.batch_size = 7;
    const int b = q->add(two);
    const int d = q->add(fakeSpec(3));
    QVERIFY(q->move(d, 0));
    QVERIFY(q->remove(b));
    QVERIFY(!q->remove(12345));
    QVERIFY(!q->move(a, 5));
    q->setStopOnFailure(true);

    RunController other;
    RunQueue again(&other);
    QVERIFY(again.load(queuePath()));
    QCOMPARE(int(again.entries().size()), 2);
    QCOMPARE(again.entries()[0].id, d);
    QCOMPARE(again.entries()[0].spec.nproc, 3);
    QCOMPARE(again.entries()[1].id, a);
    QVERIFY(again.isPaused());
    QVERIFY(again.stopOnFailure());
    QVERIFY(again.add(fakeSpec(1)) > d);  // ids are never reused
    // Paused: nothing starts.
    QSignalSpy idle(&again, &RunQueue::idle);
    again.startNext();
    QCOMPARE(idle.count(), 1);
    QVERIFY(!other.isActive());
  }

  void runningEntryReadsBackInterruptedAndResumesFromItsCheckpoint() {
    make({{"FAKE_STEPS", "20"}});
    // What the app left when it died: the entry running, its run directory with a checkpoint.
    const QString dir = data->filePath(QStringLiteral("runs/cut-short"));
    QVERIFY(QDir().mkpath(dir + QStringLiteral("/checkpoints")));
    QFile spec(RunDirectory::specPath(dir));
    QVERIFY(spec.open(QIODevice::WriteOnly));
    spec.write(QByteArray::fromStdString(to_json_text(fakeSpec(2))));
    spec.close();
    QFile ckpt(dir + QStringLiteral("/checkpoints/step-00000012.pt"));
    QVERIFY(ckpt.open(QIODevice::WriteOnly));
    ckpt.write("step 12\n");
    ckpt.close();
    const QJsonObject specJson =
        QJsonDocument::fromJson(QByteArray::fromStdString(to_json_text(fakeSpec(2)))).object();
    const QJsonObject left{
        {"entries",
         QJsonArray{
             QJsonObject{{"id", 4}, {"spec", specJson}, {"state", "running"}, {"run_dir", dir}},
             QJsonObject{{"spec", QJsonObject{{"nproc", 1}}}}}}};
    QFile f(queuePath());
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(left).toJson());
    f.close();

    QVERIFY(q->load(queuePath()));
    QCOMPARE(q->entries()[0].state, EntryState::Interrupted);
    QCOMPARE(q->entries()[1].id, 5);
    QVERIFY(q->entries()[0].pending());
    QSignalSpy ended(q.get(), &RunQueue::entryEnded);
    // Where and how each entry started, taken as it starts: a resume is checked by the worker's
    // dry run first, so the run starts (and, 8 fake steps long, may end) a few event-loop turns
    // after startNext().
    QStringList startedIn, resumedFrom;
    connect(q.get(), &RunQueue::entryStarted, this, [&](int) {
      startedIn << c->runDirectory();
      resumedFrom << QString::fromStdString(c->spec().resume);
    });
    q->startNext();
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 2, kRunTimeout);
    QCOMPARE(startedIn.size(), 2);
    QCOMPARE(startedIn[0], QFileInfo(dir).absoluteFilePath());
    QCOMPARE(resumedFrom[0], dir);
    QCOMPARE(q->entries()[0].state, EntryState::Finished);
    QCOMPARE(q->entries()[1].state, EntryState::Finished);
    // Only the steps after the checkpoint were run again.
    QFile log(RunDirectory::logPath(dir, 0));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QByteArray text = log.readAll();
    QVERIFY(text.contains("step 20/20"));
    QVERIFY(!text.contains("step 5/20"));
  }

  // Two entries that differ in the learning rate alone read differently; a sweep's entry reads
  // as the fields it sets.
  void anEntrysLineSetsItApart() {
    QueueEntry a;
    a.spec.task = "fmnist-cnn";
    a.spec.nproc = 2;
    a.spec.batch_size = 64;
    a.spec.accum_steps = 2;
    a.spec.lr = 0.001;
    a.spec.epochs = 3;
    QueueEntry b = a;
    b.spec.lr = 0.01;
    QCOMPARE(a.label(),
             QStringLiteral("fmnist-cnn, 2 rank(s), batch 64 x accum 2, lr 0.001, 3 epoch(s)"));
    QCOMPARE(b.label(),
             QStringLiteral("fmnist-cnn, 2 rank(s), batch 64 x accum 2, lr 0.01, 3 epoch(s)"));
    b.spec.name = "wide";
    QVERIFY2(b.label().startsWith(QLatin1String("wide: fmnist-cnn,")), qPrintable(b.label()));
    QJsonObject fields;
    fields.insert(QStringLiteral("accum_steps"), 4);
    b.extra.insert(QStringLiteral("fields"), fields);
    QCOMPARE(b.label(), QStringLiteral("accum_steps=4"));
  }

  void badQueueFilesNameTheFieldAndChangeNothing_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("not JSON") << QByteArray("{\"entries\": [") << "not valid JSON";
    QTest::newRow("bad spec") << QByteArray(
                                     R"({"entries":[{"spec":{}},{"spec":{"batch_size":0}}]})")
                              << "invalid entries[1].spec.batch_size '0': must be an integer";
    QTest::newRow("unknown field")
        << QByteArray(R"({"entries":[{"spec":{"bach_size":4}}]})")
        << "invalid entries[0].spec.bach_size '4': is not a run spec field";
    QTest::newRow("unknown entry key") << QByteArray(R"({"entries":[{"spec":{},"when":1}]})")
                                       << "invalid entries[0].when '1': is not a queue entry key";
    QTest::newRow("state") << QByteArray(R"({"entries":[{"spec":{},"state":"done"}]})")
                           << "invalid entries[0].state 'done'";
    QTest::newRow("no entries") << QByteArray(R"({"paused":false})") << "invalid entries";
  }
  void badQueueFilesNameTheFieldAndChangeNothing() {
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    make({});
    QFile f(queuePath());
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
    f.close();
    QString error;
    QVERIFY(!q->load(queuePath(), &error));
    QVERIFY2(error.contains(message), qPrintable(error));
    QVERIFY(!error.contains('\n'));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), text);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRunQueue)
#include "test_run_queue.moc"

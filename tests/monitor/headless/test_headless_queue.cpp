// `ddpdesk --headless --queue FILE` and `--sweep FILE` as a user runs them, with the fake worker:
// a failed run does not stop the queue unless asked; bad queue and sweep files give one line
// naming the field, exit 2, and nothing written; a sweep gets its directory (definition, index
// kept current) and one run directory per run.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = 120000;
}

class TestHeadlessQueue : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> data;

  using Result = ProcessResult;
  Result run(const QStringList& args) {
    return finishProcess(*startHeadless(QStringLiteral(DDPDESK_BIN), fakeWorker(),
                                        data->filePath(QStringLiteral("xdg")), args),
                         kTimeout);
  }
  QString write(const QString& name, const QByteArray& text) {
    const QString path = data->filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(text);
    return path;
  }
  static QJsonObject readJson(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object()
                                       : QJsonObject();
  }
  static QStringList states(const QJsonArray& entries) {
    QStringList out;
    for (const auto& e : entries) out << e.toObject().value(QLatin1String("state")).toString();
    return out;
  }
  // Anything in the data directory but the temporary directory startHeadless() gives the monitor.
  bool wroteAnything() const {
    QStringList written = QDir(data->filePath(QStringLiteral("xdg")))
                              .entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);
    written.removeAll(QStringLiteral("tmp"));
    return !written.isEmpty();
  }

 private Q_SLOTS:
  void initTestCase() { qputenv("FAKE_STEPS", "6"); }  // the ranks inherit it
  void init() {
    data = std::make_unique<QTemporaryDir>();
    QVERIFY(data->isValid());
  }
  void cleanup() { data.reset(); }

  void aFailedRunDoesNotStopTheQueueUnlessAsked_data() {
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("default") << QStringList{} << QStringList{"finished", "failed", "finished"};
    QTest::newRow("--stop-on-failure")
        << QStringList{"--stop-on-failure"} << QStringList{"finished", "failed", "queued"};
  }
  void aFailedRunDoesNotStopTheQueueUnlessAsked() {
    QFETCH(QStringList, flags);
    QFETCH(QStringList, expected);
    // The middle entry resumes a run that does not exist: its rank fails at once.
    const QByteArray missing = data->filePath(QStringLiteral("no-such-run")).toUtf8();
    const QString path = write(QStringLiteral("queue.json"),
                               R"({"entries": [{"spec": {"nproc": 2}}, {"spec": {"resume": ")" +
                                   missing + R"("}}, {"spec": {"nproc": 1, "batch_size": 8}}]})");
    const Result r = run(QStringList{"--queue", path} + flags);
    QCOMPARE(r.code, 1);
    const QJsonObject file = readJson(path);
    const QJsonArray entries = file.value(QLatin1String("entries")).toArray();
    QCOMPARE(states(entries), expected);
    QVERIFY2(r.err.contains(QLatin1String("queue: run 2/3 failed: rank 0 exited with code 2")),
             qPrintable(r.err));
    if (expected.last() == QLatin1String("finished")) {
      const QString dir = entries[2].toObject().value(QLatin1String("run_dir")).toString();
      QCOMPARE(RunDirectory::readStatus(dir)->state, QStringLiteral("Finished"));
    } else {
      QVERIFY(file.value(QLatin1String("paused")).toBool());
    }
  }

  // An entry refused before it starts is said once, not once as refused and again as failed.
  void aRefusedEntryGetsOneLine() {
    const QString path = write(
        QStringLiteral("refused.json"),
        R"({"entries": [{"spec": {"metrics_file": "/nonexistent/dir/m.jsonl"}}, {"spec": {}}]})");
    const Result r = run({"--queue", path});
    QCOMPARE(r.code, 1);
    QCOMPARE(r.err.count(QLatin1String("could not start")), 1);
    QVERIFY2(r.err.contains(QLatin1String("invalid --metrics-file")), qPrintable(r.err));
    QVERIFY2(r.err.contains(QLatin1String("queue: run 2/2 finished")), qPrintable(r.err));
  }

  void aFinishedQueueRunAgainHasNothingToDo() {
    const QString path = write(QStringLiteral("q.json"), R"({"entries":[{"spec":{}}]})");
    QCOMPARE(run({"--queue", path}).code, 0);
    const QByteArray after = QJsonDocument(readJson(path)).toJson();
    const Result again = run({"--queue", path});
    QCOMPARE(again.code, 0);
    QVERIFY2(again.err.contains(QLatin1String("nothing left to run")), qPrintable(again.err));
    QCOMPARE(QJsonDocument(readJson(path)).toJson(), after);
  }

  void badQueueFilesExitTwoAndWriteNothing() {
    const QByteArray text = R"({"entries":[{"spec":{"nproc":2}},{"spec":{"epochs":0}}]})";
    const QString path = write(QStringLiteral("bad.json"), text);
    const Result r = run({"--queue", path});
    QCOMPARE(r.code, 2);
    const QStringList lines = r.err.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].contains(QLatin1String("invalid entries[1].spec.epochs '0'")),
             qPrintable(lines[0]));
    QVERIFY(!wroteAnything());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), text);
  }

  void badSweepFilesExitTwoAndWriteNothing_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("field");
    QTest::newRow("unknown field") << QByteArray(R"({"grid": {"batch": [1, 2]}})")
                                   << "invalid grid.batch '[1,2]': is not a run spec field";
    QTest::newRow("empty grid") << QByteArray(R"({"base": {"nproc": 2}, "grid": {}})")
                                << "invalid grid '{}'";
    QTest::newRow("empty values") << QByteArray(R"({"grid": {"seed": []}})")
                                  << "invalid grid.seed '[]'";
    QTest::newRow("out of range")
        << QByteArray(R"({"grid": {"accum_steps": [1, 2, 100000]}})")
        << "invalid grid.accum_steps '100000': must be an integer from 1 to 65536";
    QTest::newRow("base out of range")
        << QByteArray(R"({"base": {"lr": -1}, "grid": {"seed": [1]}})") << "invalid base.lr '-1'";
    QTest::newRow("not JSON") << QByteArray("grid = accum_steps 1 2 4\n")
                              << "invalid sweep: not valid JSON";
  }
  void badSweepFilesExitTwoAndWriteNothing() {
    QFETCH(QByteArray, text);
    QFETCH(QString, field);
    const Result r = run({"--sweep", write(QStringLiteral("sweep.json"), text)});
    QCOMPARE(r.code, 2);
    const QStringList lines = r.err.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].contains(field), qPrintable(lines[0]));
    QVERIFY(!wroteAnything());
  }

  void queueAndSweepTakeNoRunSpecFlags() {
    const QString path = write(QStringLiteral("q.json"), R"({"entries":[]})");
    const Result r = run({"--queue", path, "--batch-size", "4"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QLatin1String("--batch-size cannot be used with --queue")),
             qPrintable(r.err));
    QVERIFY(!wroteAnything());
  }

  void aSweepGetsItsDirectoryAndOneRunDirectoryPerRun() {
    const QByteArray text = R"({"name": "acc", "base": {"nproc": 2, "batch_size": 8, "epochs": 1},)"
                            R"( "grid": {"accum_steps": [1, 2, 3, 4]}, "effective_batch": true})";
    const Result r = run({"--sweep", write(QStringLiteral("sweep.json"), text)});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.err.contains(QLatin1String("skipped {\"accum_steps\":3}: effective batch 16 is not "
                                          "a multiple of nproc 2 x accum_steps 3 = 6")),
             qPrintable(r.err));
    const QDir sweeps(data->filePath(QStringLiteral("xdg/ddpdesk/sweeps")));
    const QStringList made = sweeps.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(made.size(), 1);
    const QString dir = sweeps.absoluteFilePath(made[0]);
    QFile def(dir + QStringLiteral("/sweep.json"));
    QVERIFY(def.open(QIODevice::ReadOnly));
    QCOMPARE(def.readAll().trimmed(), text);
    const QJsonObject index = readJson(dir + QStringLiteral("/index.json"));
    const QJsonArray runs = index.value(QLatin1String("runs")).toArray();
    QCOMPARE(runs.size(), 3);
    QCOMPARE(states(runs), (QStringList{"finished", "finished", "finished"}));
    QCOMPARE(index.value(QLatin1String("skipped")).toArray().size(), 1);
    QStringList dirs;
    const int batches[] = {8, 4, 2};
    for (int i = 0; i < 3; ++i) {
      const QJsonObject run = runs[i].toObject();
      QCOMPARE(
          run.value(QLatin1String("fields")).toObject().value(QLatin1String("batch_size")).toInt(),
          batches[i]);
      const auto record = RunDirectory::readRecord(run.value(QLatin1String("run_dir")).toString());
      QVERIFY(record && record->specValid);
      QCOMPARE(record->spec.batch_size, batches[i]);
      QCOMPARE(record->spec.effective_batch(), qint64(16));
      QCOMPARE(record->status->state, QStringLiteral("Finished"));
      dirs << record->path;
    }
    dirs.removeDuplicates();
    QCOMPARE(dirs.size(), 3);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestHeadlessQueue)
#include "test_headless_queue.moc"

// Rank exit records: what a worker writes into its run directory as it exits, read back by the
// monitor and the tests. Round trip, atomic replacement, and refusal of broken files.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "exit_record.h"
#include "qt_test_main.h"

using namespace ddpdesk;

class TestExitRecord : public QObject {
  Q_OBJECT
  static ExitRecord sample() {
    ExitRecord r;
    r.rank = 2;
    r.world = 4;
    r.pid = 4242;
    r.host = "node-7";
    r.outcome = "stopped";
    r.exit_code = 0;
    r.reason = "stopped because the monitor died";
    r.step = 1234567890123LL;
    r.epoch = 3;
    r.checkpoint = "/runs/a b/checkpoints/step-00000100.pt";
    r.stop_signal = "SIGTERM";
    r.monitor_gone = true;
    r.monitor_dropped = 9876543210LL;
    return r;
  }

 private Q_SLOTS:
  void roundTrips() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    std::string error;
    QVERIFY2(write_exit_record(d, sample(), &error), error.c_str());
    QCOMPARE(QString::fromStdString(exit_record_path(d, 2)), dir.filePath("rank-2.exit.json"));
    auto back = read_exit_record(exit_record_path(d, 2));
    QVERIFY(back);
    const ExitRecord want = sample();
    QCOMPARE(back->rank, want.rank);
    QCOMPARE(back->world, want.world);
    QCOMPARE(back->pid, want.pid);
    QCOMPARE(back->host, want.host);
    QCOMPARE(back->outcome, want.outcome);
    QCOMPARE(back->exit_code, want.exit_code);
    QCOMPARE(back->reason, want.reason);
    QCOMPARE(back->step, want.step);
    QCOMPARE(back->epoch, want.epoch);
    QCOMPARE(back->checkpoint, want.checkpoint);
    QCOMPARE(back->stop_signal, want.stop_signal);
    QCOMPARE(back->monitor_gone, want.monitor_gone);
    QCOMPARE(back->monitor_dropped, want.monitor_dropped);
    // Nothing but the record itself is left in the directory.
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"rank-2.exit.json"});
  }

  void replacesAnOlderRecordAndCanBeRemoved() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    ExitRecord r = sample();
    QVERIFY(write_exit_record(d, r));
    r.outcome = "failed";
    r.exit_code = 1;
    r.reason = "rank 0 is gone";
    QVERIFY(write_exit_record(d, r));
    QCOMPARE(read_exit_record(exit_record_path(d, 2))->outcome, std::string("failed"));
    remove_exit_record(d, 2);
    QVERIFY(!read_exit_record(exit_record_path(d, 2)));
  }

  void invalidBytesInTheReasonAreReplacedNotFatal() {
    QTemporaryDir dir;
    ExitRecord r = sample();
    r.reason = "bad \xff\xfe bytes";
    QVERIFY(write_exit_record(dir.path().toStdString(), r));
    auto back = read_exit_record(exit_record_path(dir.path().toStdString(), 2));
    QVERIFY(back);
    QVERIFY(back->reason.find("bytes") != std::string::npos);
  }

  void brokenOrMissingFilesReadAsNothing_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::newRow("empty") << QByteArray();
    QTest::newRow("garbage") << QByteArray("not json");
    QTest::newRow("torn") << QByteArray("{\"rank\":1,\"world\":");
    QTest::newRow("array") << QByteArray("[1,2]");
    QTest::newRow("missing field") << QByteArray("{\"rank\":1,\"world\":2}");
    QTest::newRow("wrong type") << QByteArray(
        "{\"rank\":\"one\",\"world\":2,\"pid\":1,\"host\":\"h\",\"outcome\":\"failed\","
        "\"exit_code\":1,\"reason\":\"\",\"step\":0,\"epoch\":0,\"checkpoint\":\"\","
        "\"stop_signal\":\"\",\"monitor_gone\":false}");
  }
  void brokenOrMissingFilesReadAsNothing() {
    QFETCH(QByteArray, text);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("rank-1.exit.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
    f.close();
    QVERIFY(!read_exit_record(path.toStdString()));
    QVERIFY(!read_exit_record(dir.filePath(QStringLiteral("absent.json")).toStdString()));
  }

  // The example in docs/wire-format.md is a record this code reads.
  void documentedExampleReads() {
    QFile doc(QStringLiteral(DDPDESK_WIRE_DOC));
    QVERIFY2(doc.open(QIODevice::ReadOnly), DDPDESK_WIRE_DOC);
    QByteArray example;
    bool inBlock = false;
    for (const QByteArray& line : doc.readAll().split('\n')) {
      if (line.startsWith("```")) {
        inBlock = line == "```json exit-record";
        continue;
      }
      if (inBlock) example += line;
    }
    QVERIFY(!example.isEmpty());
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("rank-1.exit.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(example);
    f.close();
    const auto r = read_exit_record(path.toStdString());
    QVERIFY(r);
    QCOMPARE(r->outcome, std::string("stopped"));
    QVERIFY(r->monitor_gone);
    QCOMPARE(r->monitor_dropped, std::int64_t{12});
  }

  // A record written before monitor_dropped existed still reads, with nothing dropped.
  void anOlderRecordWithoutTheDropCountReads() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("rank-0.exit.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "{\"rank\":0,\"world\":1,\"pid\":1,\"host\":\"h\",\"outcome\":\"finished\","
        "\"exit_code\":0,\"reason\":\"\",\"step\":5,\"epoch\":0,\"checkpoint\":\"\","
        "\"stop_signal\":\"\",\"monitor_gone\":false}");
    f.close();
    const auto r = read_exit_record(path.toStdString());
    QVERIFY(r);
    QCOMPARE(r->step, std::int64_t{5});
    QCOMPARE(r->monitor_dropped, std::int64_t{0});
  }

  void unwritableDirectorySaysWhy() {
    std::string error;
    QVERIFY(!write_exit_record("/nonexistent/run", sample(), &error));
    QVERIFY(error.find("/nonexistent/run") != std::string::npos);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestExitRecord)
#include "test_exit_record.moc"

// RemoteRecordMirror: the remote follow loop's records, fed in pieces of every size, make a local
// mirror that holds exactly the remote file's bytes; a restart replaces the mirror's file (a new
// inode) after its follower was let read the old one; pid checks take effect at the end of their
// poll; a record that would leave a gap or repeat bytes is an error. And a RunFollower on the
// mirror hands out every line once however the stream was cut. No ssh here.
#include <sys/stat.h>

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <string>

#include "follow/run_follower.h"
#include "qt_test_main.h"
#include "run/run_directory.h"
#include "ssh/remote_record_mirror.h"
#include "wire.h"

using namespace ddpdesk;

namespace {

std::string d(int rank, qint64 offset, const QByteArray& bytes) {
  return "D " + std::to_string(rank) + " " + std::to_string(offset) + " " +
         bytes.toBase64().toStdString() + "\n";
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<missing>");
}

ino_t inode(const QString& path) {
  struct stat st {};
  return ::stat(path.toLocal8Bit().constData(), &st) == 0 ? st.st_ino : 0;
}

// Feeds `stream` to `m` in pieces of `piece` bytes; false with the error on the first failure.
bool feedInPieces(RemoteRecordMirror& m, const std::string& stream, std::size_t piece,
                  QString* error) {
  for (std::size_t at = 0; at < stream.size(); at += piece)
    if (!m.feed(stream.data() + at, std::min(piece, stream.size() - at), error)) return false;
  return true;
}

std::string wireLine(const wire::Message& m) {
  return wire::encode(m) + "\n";
}

}  // namespace

class TestRemoteRecordMirror : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void piecesOfEverySizeMakeTheSameMirror() {
    const std::string stream = "S " + QByteArray("{\"task\":\"seed\"}\n").toBase64().toStdString() +
                               "\nH 1 node7\nR 0 new\n" + d(0, 0, "one\ntw") + "A 0 42 1\nT\n" +
                               d(0, 6, "o\n") + "R 1 new\n" + d(1, 0, "r1\n") + "R 0 truncated\n" +
                               d(0, 0, "x\n") + "A 0 42 0\nX future\nT\n";
    for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
      QTemporaryDir dir;
      RemoteRecordMirror m(dir.path());
      QString error;
      QVERIFY2(feedInPieces(m, stream, piece, &error), qPrintable(error));
      QCOMPARE(readAll(RunFollower::rankFile(dir.path(), 0)), QByteArray("x\n"));
      QCOMPARE(readAll(RunFollower::rankFile(dir.path(), 1)), QByteArray("r1\n"));
      QCOMPARE(readAll(RunDirectory::specPath(dir.path())), QByteArray("{\"task\":\"seed\"}\n"));
      QVERIFY(m.hasHello());
      QCOMPARE(m.remoteHost(), QStringLiteral("node7"));
      QCOMPARE(m.polls(), qint64(2));
      QCOMPARE(m.resets(), qint64(1));  // "new" is a first appearance, not a restart
      QCOMPARE(m.resetReason(0), QStringLiteral("truncated"));
      QCOMPARE(m.alive(0, 42), std::optional<bool>(false));
      QCOMPARE(m.alive(0, 43), std::nullopt);  // another pid: not what was checked
      QCOMPARE(m.mirroredBytes(0), qint64(2));
      QCOMPARE(m.mirroredBytes(2), qint64(-1));
    }
  }

  void aPidCheckCountsOnlyOnceItsPollIsComplete() {
    QTemporaryDir dir;
    RemoteRecordMirror m(dir.path());
    QString error;
    const std::string first = "H 1 n\nA 3 9 1\nT\nA 3 9 0\n";
    QVERIFY(m.feed(first.data(), first.size(), &error));
    QCOMPARE(m.alive(3, 9), std::optional<bool>(true));  // the pending 0 is not in yet
    QVERIFY(m.feed("T\n", 2, &error));
    QCOMPARE(m.alive(3, 9), std::optional<bool>(false));
  }

  void aRestartReplacesTheFileAfterItsReaderHadItsTurn() {
    QTemporaryDir dir;
    RemoteRecordMirror m(dir.path());
    const QString file = RunFollower::rankFile(dir.path(), 0);
    QByteArray seenBeforeReset;
    m.setBeforeReset([&] { seenBeforeReset = readAll(file); });
    QString error;
    const std::string a = "R 0 new\n" + d(0, 0, "old\n");
    QVERIFY(m.feed(a.data(), a.size(), &error));
    QVERIFY(seenBeforeReset.isEmpty());  // a first appearance replaces nothing
    const ino_t before = inode(file);
    const std::string b = "R 0 replaced\n" + d(0, 0, "new\n");
    QVERIFY(m.feed(b.data(), b.size(), &error));
    QCOMPARE(seenBeforeReset, QByteArray("old\n"));
    QCOMPARE(readAll(file), QByteArray("new\n"));
    QVERIFY(inode(file) != before);  // what makes the follower read it from its start
  }

  void bytesThatDoNotContinueTheMirrorAreAnError() {
    const std::vector<std::pair<std::string, QString>> cases = {
        {"R 0 new\n" + d(0, 0, "ab") + d(0, 5, "c"), "offset 5"},   // a gap
        {"R 0 new\n" + d(0, 0, "ab") + d(0, 0, "ab"), "offset 0"},  // a repeat
        {d(4, 0, "x"), "rank-4.jsonl"},                             // no R before it
        {"D 0 0 !!notbase64\n", "malformed record"},
        {"A x 1 1\n", "malformed record"},
    };
    for (const auto& [stream, want] : cases) {
      QTemporaryDir dir;
      RemoteRecordMirror m(dir.path());
      QString error;
      QVERIFY(!m.feed(stream.data(), stream.size(), &error));
      QVERIFY2(error.contains(want) && !error.contains('\n'), qPrintable(error));
      QVERIFY(!m.feed("T\n", 2, &error));  // stays failed
    }
  }

  void aFollowerOnTheMirrorGetsEveryLineOnce() {
    std::string file;
    wire::Hello h;
    h.rank = 0;
    h.world = 1;
    h.pid = 77;
    h.host = "remote-host";
    file += wireLine(h);
    for (int s = 1; s <= 20; ++s) {
      wire::Step st;
      st.rank = 0;
      st.step = s;
      st.loss = 1.0 / s;
      file += wireLine(st);
    }
    wire::Event fin;
    fin.rank = 0;
    fin.event = "finished";
    file += wireLine(fin);
    // The file read in three remote polls, cut inside lines.
    const std::size_t cut1 = file.size() / 3 + 1, cut2 = 2 * file.size() / 3 + 3;
    const std::string stream =
        "H 1 remote-host\nR 0 new\n" + d(0, 0, QByteArray::fromStdString(file.substr(0, cut1))) +
        "T\n" + d(0, qint64(cut1), QByteArray::fromStdString(file.substr(cut1, cut2 - cut1))) +
        "A 0 77 1\nT\n" + d(0, qint64(cut2), QByteArray::fromStdString(file.substr(cut2))) +
        "A 0 77 0\nT\n";
    for (std::size_t piece : {std::size_t(1), std::size_t(7), std::size_t(64), stream.size()}) {
      QTemporaryDir dir;
      RemoteRecordMirror m(dir.path());
      RunFollower f;
      f.setSettleTime(0);
      f.setPidProbe([&m](const wire::Hello& hello) { return m.alive(hello.rank, hello.pid); });
      m.setOnPoll([&f] { f.pollNow(); });
      QSignalSpy messages(&f, &RunFollower::messagesReceived);
      QSignalSpy ended(&f, &RunFollower::runEnded);
      QVERIFY(f.follow(dir.path()));
      QString error;
      for (std::size_t at = 0; at < stream.size(); at += piece) {
        QVERIFY2(m.feed(stream.data() + at, std::min(piece, stream.size() - at), &error),
                 qPrintable(error));
        f.pollNow();  // the follower's own timer may read at any point between records
      }
      int steps = 0;
      for (const auto& call : messages)
        for (const auto& msg : call.at(0).value<std::vector<wire::Message>>())
          if (std::holds_alternative<wire::Step>(msg)) ++steps;
      QCOMPARE(steps, 20);
      QCOMPARE(f.counters().messages, qint64(22));
      QCOMPARE(f.ranks().at(0).describe(), QStringLiteral("finished"));
      QCOMPARE(ended.count(), 1);
    }
  }

  void aRankGoneOnTheRemoteHostEndsWithoutAWord() {
    wire::Hello h;
    h.rank = 0;
    h.world = 1;
    h.pid = 5;
    h.host = "far";
    const QByteArray hello = QByteArray::fromStdString(wireLine(h));
    const std::string stream = "H 1 far\nR 0 new\n" + d(0, 0, hello) + "A 0 5 0\nT\n";
    QTemporaryDir dir;
    RemoteRecordMirror m(dir.path());
    RunFollower f;
    f.setSettleTime(0);
    f.setPidProbe([&m](const wire::Hello& x) { return m.alive(x.rank, x.pid); });
    QVERIFY(f.follow(dir.path()));
    QString error;
    QVERIFY(m.feed(stream.data(), stream.size(), &error));
    f.pollNow();
    QVERIFY(f.ranks().at(0).gone);
    QVERIFY(f.ranks().at(0).failed());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRemoteRecordMirror)
#include "test_remote_record_mirror.moc"

// The remote follow loop (remote_follow_script.h) resumed from what its mirror holds, as a
// reconnecting follow over ssh does it, run here with the local sh instead of through ssh: a
// second loop given RemoteRecordMirror::resumeState() goes on at the mirrored offsets of the
// metrics file and the rank's output file (no restart, no byte twice, the pid of the last hello
// checked at once), and still reads a file again from its start when it was rewritten, truncated or
// replaced while nothing followed it. A file that shrank between the loop's stat and its read goes
// on from the bytes sent. A connection cut inside a record leaves the mirror at the last whole
// record. A script run's system metrics file resumes the same way; its status.json is mirrored
// whole once its poll is complete, and sent again only when it changed.
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "follow/rank_output_tails.h"
#include "follow/run_follower.h"
#include "qt_test_main.h"
#include "run/run_directory.h"
#include "ssh/remote_follow_script.h"
#include "ssh/remote_record_mirror.h"

using namespace ddpdesk;

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<missing>");
}

void write(const QString& path, const QByteArray& bytes, QIODevice::OpenMode mode) {
  QFile f(path);
  QVERIFY(f.open(mode));
  QCOMPARE(f.write(bytes), bytes.size());
}

// One run of the loop on `dir` with `resume`, until the end of its `count`th poll; its output.
QByteArray polls(const QString& dir, const QStringList& resume, int count = 1,
                 const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess sh;
  sh.setProcessEnvironment(env);
  sh.start(QStringLiteral("sh"),
           QStringList{QStringLiteral("-c"), remoteFollowScript(), QStringLiteral("ddpdesk-follow"),
                       dir, QStringLiteral("0.05")} +
               resume);
  QByteArray out;
  while (out.count("\nT\n") < count && sh.waitForReadyRead(10000))
    out += sh.readAllStandardOutput();
  sh.kill();
  sh.waitForFinished();
  out += sh.readAllStandardOutput();
  qsizetype end = -1;
  for (int i = 0; i < count; ++i) end = out.indexOf("\nT\n", end + 1);
  return out.left(end + 3);  // the polls, whole
}

QByteArray onePoll(const QString& dir, const QStringList& resume) {
  return polls(dir, resume);
}

QByteArray hello(qint64 pid) {
  return QByteArray(R"({"type":"hello","rank":0,"world":1,"pid":)") + QByteArray::number(pid) +
         ",\"host\":\"h\"}\n";
}

}  // namespace

class TestRemoteFollowResume : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void aResumedLoopGoesOnAtTheMirroredOffsets() {
    QTemporaryDir remote, local;
    QVERIFY(QDir().mkpath(remote.path() + "/metrics"));
    const QString file = RunFollower::rankFile(remote.path(), 0);
    const QByteArray first = hello(getpid()) + "{\"type\":\"step\",\"step\":1}\n{\"type\":";
    write(file, first, QIODevice::WriteOnly);
    const QString output = RankOutputTails::outputFile(remote.path(), 0);  // the rank's stdout
    write(output, "epoch 1 step 1\nepo", QIODevice::WriteOnly);
    RemoteRecordMirror m(local.path());
    QString error;
    const QByteArray a = onePoll(remote.path(), {});
    QVERIFY(m.feed(a.constData(), std::size_t(a.size()), &error));
    QCOMPARE(readAll(RunFollower::rankFile(local.path(), 0)), first);
    QCOMPARE(m.alive(0, getpid()), std::nullopt);  // checked from the next poll on

    // The connection goes; the rank writes on; a new loop is told what the mirror holds.
    const QByteArray more = "\"step\",\"step\":2}\n";
    write(file, more, QIODevice::Append);
    write(output, "ch 1 step 2\n", QIODevice::Append);
    m.newConnection();
    QVERIFY(!m.hasHello());
    const QByteArray b = onePoll(remote.path(), m.resumeState());
    QVERIFY2(!b.contains("\nR "), b.constData());  // not read again from its start
    QVERIFY2(b.contains("\nD 0 " + QByteArray::number(first.size()) + " "), b.constData());
    QVERIFY(m.feed(b.constData(), std::size_t(b.size()), &error));
    QVERIFY(m.hasHello());
    QCOMPARE(readAll(RunFollower::rankFile(local.path(), 0)), first + more);
    QCOMPARE(readAll(RankOutputTails::outputFile(local.path(), 0)),
             QByteArray("epoch 1 step 1\nepoch 1 step 2\n"));
    QCOMPARE(m.resets(), qint64(0));
    // The pid of the hello mirrored before was found again and checked in the first poll.
    QCOMPARE(m.alive(0, getpid()), std::optional<bool>(true));
  }

  void aFileChangedWhileNothingFollowedIsReadAgain() {
    struct Case {
      const char* name;
      std::function<void(const QString&)> change;
    };
    const QByteArray original = hello(11) + "{\"type\":\"step\",\"step\":1}\n";
    const std::vector<Case> cases = {
        {"rewritten",  // in place, no shorter: only its first bytes tell
         [&](const QString& f) { write(f, hello(12) + original, QIODevice::WriteOnly); }},
        {"truncated", [&](const QString& f) { write(f, original.left(10), QIODevice::WriteOnly); }},
        {"replaced",
         [](const QString& f) {
           write(f + ".new", hello(13), QIODevice::WriteOnly);
           QVERIFY(QFile::remove(f) && QFile::rename(f + ".new", f));
         }},
    };
    for (const Case& c : cases) {
      QTemporaryDir remote, local;
      QVERIFY(QDir().mkpath(remote.path() + "/metrics"));
      const QString file = RunFollower::rankFile(remote.path(), 0);
      write(file, original, QIODevice::WriteOnly);
      RemoteRecordMirror m(local.path());
      QString error;
      const QByteArray a = onePoll(remote.path(), {});
      QVERIFY(m.feed(a.constData(), std::size_t(a.size()), &error));
      c.change(file);
      m.newConnection();
      const QByteArray b = onePoll(remote.path(), m.resumeState());
      QVERIFY(m.feed(b.constData(), std::size_t(b.size()), &error));
      QCOMPARE(m.resetReason(0), QString::fromLatin1(c.name));
      QCOMPARE(readAll(RunFollower::rankFile(local.path(), 0)), readAll(file));
    }
  }

  // A file truncated between the loop's stat and its read: the loop sends fewer bytes than the
  // stat promised. It must go on from the bytes it sent (what the mirror holds), else its next
  // poll finds the file "shorter" than its offset and sends it all again. The stat that saw the
  // file before the truncation is a `stat` on PATH adding 500 bytes to the first size it tells.
  void aFileThatShrankUnderTheReadGoesOnFromTheBytesSent() {
    QTemporaryDir remote, local, bin;
    QVERIFY(QDir().mkpath(remote.path() + "/metrics"));
    const QString file = RunFollower::rankFile(remote.path(), 0);
    const QByteArray content = hello(31) + "{\"type\":\"step\",\"step\":1}\n";
    write(file, content, QIODevice::WriteOnly);
    const QString stale = bin.path() + "/stat";
    write(stale,
          "#!/bin/sh\nout=$(/usr/bin/stat \"$@\") || exit 1\n"
          "[ -e \"$0.seen\" ] && { echo \"$out\"; exit 0; }\n"
          ": > \"$0.seen\"; set -- $out; echo \"$1 $(($2 + 500))\"\n",
          QIODevice::WriteOnly);
    QVERIFY(QFile::setPermissions(stale, QFile::permissions(stale) | QFileDevice::ExeOwner));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PATH"), bin.path() + ":" + env.value(QStringLiteral("PATH")));
    const QByteArray out = polls(remote.path(), {}, 3, env);
    QVERIFY2(QFile::exists(stale + ".seen"), out.constData());  // the stale size was told
    QCOMPARE(out.count("\nR 0 "), qsizetype(1));                // "new", and no other
    QVERIFY2(out.contains("\nD 0 0 "), out.constData());
    QVERIFY2(!out.contains("\nD 0 " + QByteArray::number(content.size() + 500)), out.constData());
    RemoteRecordMirror m(local.path());
    QString error;
    QVERIFY2(m.feed(out.constData(), std::size_t(out.size()), &error), qPrintable(error));
    QCOMPARE(readAll(RunFollower::rankFile(local.path(), 0)), content);
    QCOMPARE(m.resets(), qint64(0));
    // The file grows on: the loop's offset is the mirror's, so the new bytes continue it.
    write(file, "{\"type\":\"step\",\"step\":2}\n", QIODevice::Append);
    m.newConnection();
    const QByteArray more = onePoll(remote.path(), m.resumeState());
    QVERIFY2(m.feed(more.constData(), std::size_t(more.size()), &error), qPrintable(error));
    QCOMPARE(readAll(RunFollower::rankFile(local.path(), 0)), readAll(file));
    QCOMPARE(m.resets(), qint64(0));
  }

  void aConnectionCutInsideARecordLeavesTheLastWholeOne() {
    QTemporaryDir remote, local;
    QVERIFY(QDir().mkpath(remote.path() + "/metrics"));
    const QString file = RunFollower::rankFile(remote.path(), 0);
    write(file, hello(21) + "{\"type\":\"step\",\"step\":1}\n", QIODevice::WriteOnly);
    RemoteRecordMirror m(local.path());
    QString error;
    const QByteArray a = onePoll(remote.path(), {});
    const qsizetype cut = a.indexOf("\nD ") + 10;  // inside the data record
    QVERIFY(m.feed(a.constData(), std::size_t(cut), &error));
    QCOMPARE(m.mirroredBytes(0), qint64(0));  // the R came, its bytes did not
    m.newConnection();
    const QByteArray b = onePoll(remote.path(), m.resumeState());
    QVERIFY(m.feed(b.constData(), std::size_t(b.size()), &error));
    QCOMPARE(readAll(RunFollower::rankFile(local.path(), 0)), readAll(file));
    QCOMPARE(m.resets(), qint64(0));
  }

  // A script run's metrics/system.jsonl is mirrored and resumed as a rank's file is; its
  // status.json comes whole, in the mirror once its poll is complete, and again when it changed.
  void theSystemMetricsAndTheStatusAreMirrored() {
    QTemporaryDir remote, local;
    QVERIFY(QDir().mkpath(remote.path() + "/metrics"));
    const QString system = RunDirectory::systemMetricsPath(remote.path());
    const QByteArray gauge = R"({"type":"gauge","rank":1,"name":"rss_bytes","value":5})"
                             "\n";
    write(system, gauge, QIODevice::WriteOnly);
    const QString status = RunDirectory::statusPath(remote.path());
    write(status, R"({"state":"running"})", QIODevice::WriteOnly);
    RemoteRecordMirror m(local.path());
    QString error;
    const QByteArray a = onePoll(remote.path(), {});
    QVERIFY2(a.contains("\nU "), a.constData());
    // Everything but the poll's end: the status waits for it.
    QVERIFY(m.feed(a.constData(), std::size_t(a.size() - 2), &error));
    QCOMPARE(readAll(RunDirectory::statusPath(local.path())), QByteArray("<missing>"));
    QVERIFY(m.feed("T\n", 2, &error));
    QCOMPARE(readAll(RunDirectory::statusPath(local.path())), readAll(status));
    QCOMPARE(readAll(RunDirectory::systemMetricsPath(local.path())), gauge);

    // The run ends while nothing follows it; a new loop goes on where the mirror is.
    write(system, gauge, QIODevice::Append);
    write(status, R"({"state":"finished"})", QIODevice::WriteOnly | QIODevice::Truncate);
    m.newConnection();
    const QByteArray b = onePoll(remote.path(), m.resumeState());
    QVERIFY2(!b.contains("\nR "), b.constData());
    QVERIFY2(b.contains("\nD M " + QByteArray::number(gauge.size()) + " "), b.constData());
    QVERIFY(m.feed(b.constData(), std::size_t(b.size()), &error));
    QCOMPARE(readAll(RunDirectory::systemMetricsPath(local.path())), gauge + gauge);
    QCOMPARE(readAll(RunDirectory::statusPath(local.path())),
             QByteArray(R"({"state":"finished"})"));
    QCOMPARE(m.resets(), qint64(0));
    // An unchanged status is sent once: two polls of one loop hold one U record.
    const QByteArray c = polls(remote.path(), m.resumeState(), 2);
    QCOMPARE(c.count("\nU "), 1);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRemoteFollowResume)
#include "test_remote_follow_resume.moc"

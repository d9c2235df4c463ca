// RunFollower over a run directory whose rank files the test writes in pieces with the wire
// codec: files appearing late, half lines, a restarted rank, the ends of a run (finished, error,
// a local pid gone; a remote one is not judged by pid), following on after the end when asked
// (a requeued Slurm job), and no message delivered twice; the system metrics a script run's
// monitor wrote (metrics/system.jsonl) arrive as gauges.
#include <unistd.h>
#include <QDir>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdio>

#include "append_bytes.h"
#include "follow/run_follower.h"
#include "qt_test_main.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using ddpdesk::test::appendBytes;

namespace {

std::string host() {
  char h[256] = {0};
  ::gethostname(h, sizeof h - 1);
  return h;
}

std::string line(const wire::Message& m) {
  return wire::encode(m) + "\n";
}

wire::Hello hello(int rank, int world, qint64 pid, const std::string& on = host()) {
  wire::Hello h;
  h.rank = rank;
  h.world = world;
  h.pid = pid;
  h.host = on;
  h.device = "cpu";
  return h;
}

wire::Step step(int rank, int k) {
  wire::Step s;
  s.rank = rank;
  s.step = k;
  s.loss = 1.0 / k;
  s.global_loss = s.loss;
  s.samples = 8 * k;
  s.time = 0.01 * k;
  return s;
}

wire::Event rankEvent(int rank, const char* name) {
  wire::Event e;
  e.rank = rank;
  e.event = name;
  return e;
}

// Steps received per rank, in order.
struct Received {
  std::map<int, std::vector<qint64>> steps;
  explicit Received(RunFollower& f) {
    QObject::connect(&f, &RunFollower::messagesReceived,
                     [this](const std::vector<wire::Message>& ms, const QByteArray&) {
                       for (const auto& m : ms)
                         if (const auto* s = std::get_if<wire::Step>(&m))
                           steps[s->rank].push_back(s->step);
                     });
  }
};

std::vector<qint64> range(int from, int to) {
  std::vector<qint64> v;
  for (int k = from; k <= to; ++k) v.push_back(k);
  return v;
}

// A pid that existed and is gone now: a finished child, reaped.
qint64 deadPid() {
  QProcess p;
  p.start(QStringLiteral("/bin/true"), {});
  p.waitForFinished();
  return p.processId() > 0 ? p.processId() : 999999;
}

}  // namespace

class TestRunFollower : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> dir;
  QString file(int rank) { return RunFollower::rankFile(dir->path(), rank); }

  std::unique_ptr<RunFollower> make() {
    auto f = std::make_unique<RunFollower>();
    f->setPollInterval(3600 * 1000);  // the test polls
    f->setSettleTime(0);
    return f;
  }

 private Q_SLOTS:
  void init() {
    dir = std::make_unique<QTemporaryDir>();
    QVERIFY(dir->isValid());
  }

  void notADirectoryIsRefused() {
    RunFollower f;
    QString error;
    QVERIFY(!f.follow(dir->filePath("nope"), &error));
    QVERIFY(error.contains("nope"));
    QVERIFY(error.contains("not a directory"));
  }

  void twoRanksWrittenInPiecesArriveOnceAndEnd() {
    auto f = make();
    Received got(*f);
    QSignalSpy hellos(f.get(), &RunFollower::helloReceived);
    QSignalSpy ended(f.get(), &RunFollower::runEnded);
    QVERIFY(f->follow(dir->path()));
    f->pollNow();  // metrics/ does not exist yet
    QCOMPARE(f->world(), 0);
    QVERIFY(QDir(dir->path()).mkdir("metrics"));
    const qint64 me = QCoreApplication::applicationPid();
    std::string r0 = line(hello(0, 2, me));
    for (int k = 1; k <= 30; ++k) r0 += line(step(0, k));
    appendBytes(file(0), r0.substr(0, r0.size() / 2));
    f->pollNow();
    QCOMPARE(hellos.count(), 1);
    QCOMPARE(f->world(), 2);
    appendBytes(file(0), r0.substr(r0.size() / 2));
    f->pollNow();
    // Rank 1's file appears late, after rank 0 wrote everything.
    std::string r1 = line(hello(1, 2, me));
    for (int k = 1; k <= 30; ++k) r1 += line(step(1, k));
    appendBytes(file(1), r1.substr(0, 7));
    f->pollNow();
    QCOMPARE(hellos.count(), 1);  // half a hello is nothing yet
    appendBytes(file(1), r1.substr(7));
    appendBytes(file(0), line(rankEvent(0, "finished")));
    f->pollNow();
    QCOMPARE(hellos.count(), 2);
    QVERIFY(!f->allEnded());
    QCOMPARE(ended.count(), 0);
    appendBytes(file(1), line(rankEvent(1, "finished")));
    f->pollNow();
    f->pollNow();  // settled (settle time 0)
    QCOMPARE(ended.count(), 1);
    QCOMPARE(got.steps[0], range(1, 30));
    QCOMPARE(got.steps[1], range(1, 30));
    QCOMPARE(f->ranks().at(1).describe(), QStringLiteral("finished"));
    QCOMPARE(f->counters().messages, 2 + 60 + 2);
    QCOMPARE(f->counters().malformed, 0);
  }

  // rank-N.log beside the metrics: each complete line once, in order, a half line waiting for
  // its end; the last 10 kept, and a truncated file starting them afresh.
  void theRanksOutputFilesArriveLineByLine() {
    auto f = make();
    std::vector<std::pair<int, QString>> got;
    connect(f.get(), &RunFollower::outputLine,
            [&](int rank, const QString& text) { got.emplace_back(rank, text); });
    QVERIFY(f->follow(dir->path()));
    const QString log0 = dir->filePath("rank-0.log");
    std::string out;
    for (int k = 1; k <= 25; ++k) out += "line " + std::to_string(k) + "\n";
    appendBytes(log0, out.substr(0, 24));  // "line 1\nline 2\nline 3\nlin"
    appendBytes(dir->filePath("rank-1.log"), "rank one\r\n");
    appendBytes(dir->filePath("rank-x.log"), "not a rank\n");
    f->pollNow();
    QCOMPARE(got.size(), std::size_t(4));
    QCOMPARE(got[2], std::make_pair(0, QStringLiteral("line 3")));
    QCOMPARE(got[3], std::make_pair(1, QStringLiteral("rank one")));  // without its \r
    appendBytes(log0, out.substr(24));
    f->pollNow();
    f->pollNow();
    QCOMPARE(got.size(), std::size_t(26));
    for (int k = 1; k <= 25; ++k)
      QCOMPARE(got[std::size_t(k < 4 ? k - 1 : k)].second, QStringLiteral("line %1").arg(k));
    QStringList last;
    for (int k = 16; k <= 25; ++k) last << QStringLiteral("line %1").arg(k);
    QCOMPARE(f->outputTail(0), last);
    QCOMPARE(f->outputTail(1), QStringList{"rank one"});
    QCOMPARE(f->outputTail(2), QStringList());
    {  // truncated: read again from its start; the lines kept are the new file's
      QFile trunc(log0);
      QVERIFY(trunc.open(QIODevice::WriteOnly | QIODevice::Truncate));
      QVERIFY(trunc.write("again\n") == 6);
    }
    f->pollNow();
    QCOMPARE(got.back(), std::make_pair(0, QStringLiteral("again")));
    QCOMPARE(f->outputTail(0), QStringList{"again"});
  }

  // A running rank on another host (no pid to check) whose file gives nothing for the silent
  // limit is silent, once, until a line comes; an ended rank is never silent.
  void aQuietRankIsSilentUntilHeardFromAgain() {
    auto f = make();
    f->setSilentLimit(50);
    QSignalSpy silent(f.get(), &RunFollower::rankSilent);
    QSignalSpy again(f.get(), &RunFollower::rankHeardAgain);
    QVERIFY(QDir(dir->path()).mkdir("metrics"));
    appendBytes(file(0), line(hello(0, 1, 4242, "node-b.invalid")) + line(step(0, 1)));
    QVERIFY(f->follow(dir->path()));
    QCOMPARE(silent.count(), 0);  // just heard from
    QTest::qWait(120);
    f->pollNow();
    QCOMPARE(silent.count(), 1);
    QCOMPARE(silent.at(0).at(0).toInt(), 0);
    QVERIFY2(f->ranks().at(0).describe().startsWith("silent for "),
             qPrintable(f->ranks().at(0).describe()));
    QVERIFY(!f->ranks().at(0).ended());  // silence is not an ending
    f->pollNow();
    QCOMPARE(silent.count(), 1);  // said once
    appendBytes(file(0), line(step(0, 2)));
    f->pollNow();
    QCOMPARE(again.count(), 1);
    QCOMPARE(f->ranks().at(0).describe(), QStringLiteral("running"));
    appendBytes(file(0), line(rankEvent(0, "finished")));
    f->pollNow();
    QTest::qWait(120);
    f->pollNow();
    QCOMPARE(silent.count(), 1);
  }

  void anErrorEndsARankAsFailed() {
    auto f = make();
    QSignalSpy ended(f.get(), &RunFollower::runEnded);
    QVERIFY(QDir(dir->path()).mkdir("metrics"));
    const qint64 me = QCoreApplication::applicationPid();
    appendBytes(file(0), line(hello(0, 2, me)) + line(rankEvent(0, "finished")));
    appendBytes(file(1), line(hello(1, 2, me)) + line(wire::Error{1, "gloo timed out"}));
    QVERIFY(f->follow(dir->path()));
    f->pollNow();
    QCOMPARE(ended.count(), 1);
    QVERIFY(f->ranks().at(1).failed());
    QVERIFY(!f->ranks().at(0).failed());
    QCOMPARE(f->ranks().at(1).describe(), QStringLiteral("failed: gloo timed out"));
  }

  // A rank that fails and comes back (its file replaced: a new hello) runs again; what its old
  // file said is not delivered a second time.
  void aRestartedRankRunsAgainAndNothingRepeats() {
    auto f = make();
    f->setSettleTime(3600 * 1000);  // the run's end is judged by allEnded() here
    Received got(*f);
    QSignalSpy restarted(f.get(), &RunFollower::rankRestarted);
    QVERIFY(QDir(dir->path()).mkdir("metrics"));
    const qint64 me = QCoreApplication::applicationPid();
    std::string old = line(hello(0, 1, me));
    for (int k = 1; k <= 5; ++k) old += line(step(0, k));
    old += line(wire::Error{0, "killed"});
    appendBytes(file(0), old);
    QVERIFY(f->follow(dir->path()));
    QVERIFY(f->ranks().at(0).ended());
    std::string fresh = line(hello(0, 1, me));
    for (int k = 4; k <= 8; ++k) fresh += line(step(0, k));  // resumed from step 3
    const QString next = dir->filePath("metrics/next");
    appendBytes(next, fresh, "w");
    QVERIFY(std::rename(next.toLocal8Bit().constData(), file(0).toLocal8Bit().constData()) == 0);
    f->pollNow();
    QCOMPARE(restarted.count(), 1);
    QVERIFY(!f->ranks().at(0).ended());
    QVERIFY(!f->allEnded());
    std::vector<qint64> want = range(1, 5);
    for (qint64 k : range(4, 8)) want.push_back(k);
    QCOMPARE(got.steps[0], want);
    appendBytes(file(0), line(rankEvent(0, "stopped")));
    f->pollNow();
    QVERIFY(f->allEnded());
    QCOMPARE(f->ranks().at(0).describe(), QStringLiteral("stopped"));
    QCOMPARE(got.steps[0].size(), want.size());
  }

  // A Slurm job's files (setFollowAfterEnd): its ranks all stopped and settled, a requeued
  // attempt appends a new hello and steps: still read, the run not ended until they end again;
  // without it the follower stops at the end.
  void followedAfterTheEndWhenAskedSo() {
    for (const bool after : {true, false}) {
      init();
      auto f = make();
      f->setFollowAfterEnd(after);
      Received got(*f);
      QSignalSpy ended(f.get(), &RunFollower::runEnded);
      QVERIFY(QDir(dir->path()).mkdir("metrics"));
      const qint64 me = QCoreApplication::applicationPid();
      std::string first = line(hello(0, 1, me));
      for (int k = 1; k <= 5; ++k) first += line(step(0, k));
      appendBytes(file(0), first + line(rankEvent(0, "stopped")));
      QVERIFY(f->follow(dir->path()));
      f->pollNow();  // settled (settle time 0)
      QCOMPARE(ended.count(), 1);
      QVERIFY(f->hasEnded());
      std::string again = line(hello(0, 1, me));
      for (int k = 6; k <= 8; ++k) again += line(step(0, k));
      appendBytes(file(0), again);
      f->pollNow();
      QCOMPARE(got.steps[0], range(1, after ? 8 : 5));
      QCOMPARE(f->hasEnded(), !after);
      appendBytes(file(0), line(rankEvent(0, "finished")));
      f->pollNow();
      f->pollNow();
      QCOMPARE(ended.count(), after ? 2 : 1);
    }
  }

  // A rank of this host whose pid is gone without a last line has ended (failed); the same on
  // another host is not judged by a pid that means nothing here.
  void aVanishedLocalPidEndsItsRank() {
    auto f = make();
    QSignalSpy ended(f.get(), &RunFollower::runEnded);
    QSignalSpy rankEnded(f.get(), &RunFollower::rankEnded);
    QVERIFY(QDir(dir->path()).mkdir("metrics"));
    const qint64 dead = deadPid();
    appendBytes(file(0), line(hello(0, 2, dead)) + line(step(0, 1)));
    appendBytes(file(1), line(hello(1, 2, dead, "some-other-host")) + line(step(1, 1)));
    QVERIFY(f->follow(dir->path()));
    f->pollNow();
    QVERIFY(f->ranks().at(0).gone);
    QVERIFY(f->ranks().at(0).failed());
    QVERIFY(f->ranks().at(0).describe().contains(QString::number(dead)));
    QVERIFY(!f->ranks().at(1).ended());
    QCOMPARE(rankEnded.count(), 1);
    QCOMPARE(ended.count(), 0);
    appendBytes(file(1), line(rankEvent(1, "finished")));
    f->pollNow();
    f->pollNow();
    QCOMPARE(ended.count(), 1);
    QCOMPARE(rankEnded.count(), 2);  // once per ending, not per poll
  }

  void malformedLinesAndLinesOfAnotherRankAreCounted() {
    auto f = make();
    QSignalSpy bad(f.get(), &RunFollower::malformedLines);
    QVERIFY(QDir(dir->path()).mkdir("metrics"));
    const qint64 me = QCoreApplication::applicationPid();
    appendBytes(file(0),
                line(hello(0, 1, me)) + "{not json\n" + line(step(1, 1)) + line(step(0, 1)));
    QVERIFY(f->follow(dir->path()));
    QCOMPARE(f->counters().malformed, 2);
    QCOMPARE(bad.count(), 1);
    QCOMPARE(f->counters().messages, 2);
  }

  // metrics/system.jsonl (a script run's monitor sampled its ranks): its gauges are handed out
  // for their ranks, half lines wait, anything but a gauge is counted and dropped, and it makes
  // no rank known: no hello, no ending, no world.
  void theMonitorsSystemMetricsArriveAsGauges() {
    auto f = make();
    std::vector<wire::Gauge> gauges;
    int others = 0;
    QObject::connect(f.get(), &RunFollower::messagesReceived,
                     [&](const std::vector<wire::Message>& ms, const QByteArray&) {
                       for (const auto& m : ms) {
                         if (const auto* g = std::get_if<wire::Gauge>(&m))
                           gauges.push_back(*g);
                         else
                           ++others;
                       }
                     });
    QVERIFY(f->follow(dir->path()));
    const QString system = RunDirectory::systemMetricsPath(dir->path());
    wire::Gauge g;
    g.name = "rss_bytes";
    g.value = 1024;
    std::string bytes;
    for (int rank : {0, 1}) {
      g.rank = rank;
      bytes += line(g);
    }
    bytes += line(step(0, 1));  // not the monitor's to write there
    g.rank = 1;
    g.value = 2048;
    const std::string last = line(g);
    QVERIFY(QDir(dir->path()).mkdir("metrics"));
    appendBytes(system, bytes + last.substr(0, 10));
    f->pollNow();
    QCOMPARE(int(gauges.size()), 2);
    QCOMPARE(gauges[0].rank, 0);
    QCOMPARE(gauges[1].rank, 1);
    QCOMPARE(others, 0);
    QCOMPARE(f->counters().malformed, qint64(1));
    appendBytes(system, last.substr(10));
    f->pollNow();
    QCOMPARE(int(gauges.size()), 3);
    QCOMPARE(gauges[2].value, 2048.0);
    QVERIFY(f->ranks().empty());
    QCOMPARE(f->world(), 0);
    QVERIFY(!f->hasEnded());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRunFollower)
#include "test_run_follower.moc"

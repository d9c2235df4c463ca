// LocalRankLauncher on its own, with real processes (/bin/sh standing in for the worker): a free
// port and a fresh token per run, the worker's arguments, each rank's environment (torchrun's
// variables, the socket and token, TORCHELASTIC_* dropped, OMP_NUM_THREADS defaulted), the
// ranks' output, exits and signals, and no process left once the launcher is gone.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <map>
#include <memory>

#include "local/local_rank_launcher.h"
#include "local/rank_process.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = 30000;  // process starts on a loaded machine; never a timing test
const QString kShell = QStringLiteral("/bin/sh");
}  // namespace

class TestLocalRankLauncher : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> dir;

  QString logPath(int rank) const { return dir->filePath(QStringLiteral("rank-%1.log").arg(rank)); }
  void startAll(LocalRankLauncher& l, const QString& script) {
    for (int r = 0; r < l.size(); ++r)
      l.startRank(r, kShell, {QStringLiteral("-c"), script}, QStringLiteral("/tmp/sock"),
                  logPath(r));
  }

 private Q_SLOTS:
  void init() { dir = std::make_unique<QTemporaryDir>(); }
  void cleanup() {
    dir.reset();
    qunsetenv("TORCHELASTIC_RUN_ID");
    qputenv("OMP_NUM_THREADS", "1");  // as CTest runs every test
  }

  void prepareGivesAFreePortAndAFreshToken() {
    LocalRankLauncher l;
    QString error;
    QVERIFY(l.prepare(&error));
    QVERIFY(error.isEmpty());
    QVERIFY(l.port() > 0);
    QCOMPARE(l.token().size(), 32);  // 128 random bits in hex
    QVERIFY(QRegularExpression("^[0-9a-f]{32}$").match(l.token()).hasMatch());
    const QString first = l.token();
    QVERIFY(l.prepare());
    QVERIFY(l.token() != first);  // a token is good for one run only
  }

  void workerArgumentsNameTheSpecTheRunDirectoryAndTheResume() {
    QCOMPARE(LocalRankLauncher::workerArguments("/runs/a", QString()),
             QStringList({"--config", "/runs/a/spec.json", "--run-dir", "/runs/a"}));
    QCOMPARE(LocalRankLauncher::workerArguments("/runs/a", "/runs/old"),
             QStringList({"--config", "/runs/a/spec.json", "--run-dir", "/runs/a", "--resume",
                          "/runs/old"}));
  }

  void eachRankGetsTorchrunsEnvironmentAndTheMonitors() {
    qputenv("TORCHELASTIC_RUN_ID", "from-an-outer-torchrun");
    qunsetenv("OMP_NUM_THREADS");
    LocalRankLauncher l;
    l.setExtraEnvironment(fakeEnv({{"FAKE_STEPS", "3"}, {"RANK", "99"}}));
    QVERIFY(l.prepare());
    const QProcessEnvironment env = l.rankEnvironment(2, 4, "/tmp/ddpdesk-x/metrics.sock");
    QCOMPARE(env.value("RANK"), QStringLiteral("2"));  // the run's own win over the extra
    QCOMPARE(env.value("WORLD_SIZE"), QStringLiteral("4"));
    QCOMPARE(env.value("LOCAL_RANK"), QStringLiteral("2"));
    QCOMPARE(env.value("LOCAL_WORLD_SIZE"), QStringLiteral("4"));
    QCOMPARE(env.value("MASTER_ADDR"), QStringLiteral("127.0.0.1"));
    QCOMPARE(env.value("MASTER_PORT"), QString::number(l.port()));
    QCOMPARE(env.value("DDPDESK_MONITOR"), QStringLiteral("/tmp/ddpdesk-x/metrics.sock"));
    QCOMPARE(env.value("DDPDESK_TOKEN"), l.token());
    QCOMPARE(env.value("FAKE_STEPS"), QStringLiteral("3"));
    QVERIFY(!env.contains("TORCHELASTIC_RUN_ID"));
    QCOMPARE(env.value("OMP_NUM_THREADS"), QStringLiteral("1"));
    QVERIFY(env.contains("PATH"));  // the system's environment underneath

    l.setExtraEnvironment(fakeEnv({{"OMP_NUM_THREADS", "4"}}));  // a person's choice stays
    QCOMPARE(l.rankEnvironment(0, 1, "s").value("OMP_NUM_THREADS"), QStringLiteral("4"));
  }

  void ranksRunWithTheirEnvironmentAndReportTheirEnd() {
    LocalRankLauncher l;
    QVERIFY(l.prepare());
    l.create(2);
    QCOMPARE(l.size(), 2);
    QVERIFY(!l.allExited());
    QSignalSpy lines(&l, &LocalRankLauncher::line);
    QSignalSpy started(&l, &LocalRankLauncher::rankStarted);
    QSignalSpy finished(&l, &LocalRankLauncher::rankFinished);
    startAll(l, "echo rank=$RANK of $WORLD_SIZE token=$DDPDESK_TOKEN; echo oops >&2; exit $RANK");
    QTRY_VERIFY_WITH_TIMEOUT(l.allExited(), kTimeout);
    QCOMPARE(finished.count(), 2);
    QCOMPARE(started.count(), 2);
    for (const auto& args : started) {
      const int r = args.at(0).toInt();
      QCOMPARE(args.at(1).toLongLong(), l.rank(r)->pid());
      QVERIFY(l.rank(r)->pid() > 0);
    }
    for (int r = 0; r < 2; ++r) {
      QCOMPARE(l.rank(r)->exitInfo().exitCode, r);
      QVERIFY(!l.rank(r)->exitInfo().crashed);
      QFile log(logPath(r));
      QVERIFY(log.open(QIODevice::ReadOnly));
      QVERIFY(log.readAll().contains(
          QStringLiteral("rank=%1 of 2 token=%2").arg(r).arg(l.token()).toUtf8()));
    }
    bool sawStderr = false, sawRank1 = false;
    for (const auto& args : lines) {
      sawStderr = sawStderr || (args.at(1).toBool() && args.at(2).toString() == "oops");
      sawRank1 =
          sawRank1 || (args.at(0).toInt() == 1 && args.at(2).toString().startsWith("rank=1"));
    }
    QVERIFY(sawStderr);
    QVERIFY(sawRank1);
  }

  // The worker starts with SIGINT and SIGTERM blocked (its stop-signal thread takes them, and a
  // stop during its loading must wait for that thread); any other program gets them as they are,
  // so a SIGTERM still ends it.
  void stopSignalsAreBlockedFromBirthOnlyWhenAsked() {
    LocalRankLauncher l;
    QVERIFY(l.prepare());
    l.create(2);
    QSignalSpy lines(&l, &LocalRankLauncher::line);
    // grep itself, not a shell: dash clears the signal mask as it starts.
    const QString grep = QStringLiteral("/bin/grep");
    const QStringList args = {QStringLiteral("SigBlk"), QStringLiteral("/proc/self/status")};
    l.startRank(0, grep, args, QStringLiteral("/tmp/sock"), logPath(0),
                RankProcess::StopSignals::Blocked);
    l.startRank(1, grep, args, QStringLiteral("/tmp/sock"), logPath(1));
    QTRY_VERIFY_WITH_TIMEOUT(l.allExited(), kTimeout);
    std::map<int, unsigned long long> blocked;
    for (const auto& args : lines) {
      const QString text = args.at(2).toString();
      if (text.startsWith(QStringLiteral("SigBlk:")))
        blocked[args.at(0).toInt()] = text.mid(7).trimmed().toULongLong(nullptr, 16);
    }
    QCOMPARE(int(blocked.size()), 2);
    const unsigned long long stops = (1ULL << (SIGINT - 1)) | (1ULL << (SIGTERM - 1));
    QCOMPARE(blocked[0] & stops, stops);
    QCOMPARE(blocked[1] & stops, 0ULL);
  }

  void terminateReachesEveryRankAndNothingOutlivesTheLauncher() {
    auto l = std::make_unique<LocalRankLauncher>();
    QVERIFY(l->prepare());
    l->create(2);
    QSignalSpy started(l.get(), &LocalRankLauncher::rankStarted);
    startAll(*l, "exec sleep 60");
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 2, kTimeout);
    l->terminateAll();
    QTRY_VERIFY_WITH_TIMEOUT(l->allExited(), kTimeout);
    for (const RankProcess* p : l->ranks()) {
      QVERIFY(p->exitInfo().crashed);
      QCOMPARE(p->exitInfo().signal, SIGTERM);
      QVERIFY(!p->exitInfo().killedByUs);  // a SIGTERM is a request, not a kill
    }

    // A new run forgets the old ranks; destroying the launcher mid-run kills and reaps its own.
    l->create(1);
    QCOMPARE(l->size(), 1);
    startAll(*l, "exec sleep 60");
    QTRY_VERIFY_WITH_TIMEOUT(l->rank(0)->isRunning() && l->rank(0)->pid() > 0, kTimeout);
    const qint64 pid = l->rank(0)->pid();
    l.reset();
    QVERIFY(pidGone(pid));
  }
};

DDPDESK_TEST_MAIN(TestLocalRankLauncher)
#include "test_local_rank_launcher.moc"

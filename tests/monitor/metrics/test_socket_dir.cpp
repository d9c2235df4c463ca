// The monitor's private socket directory never outlives it: a server that closes removes it;
// `ddpdesk` (headless and the window) ended by SIGTERM, SIGHUP or SIGINT mid-run removes it;
// one killed outright (SIGKILL, which nothing survives) leaves it, and the next monitor to start
// sweeps it while a live monitor's directory stays. Every directory lives under this test's own
// XDG_RUNTIME_DIR.
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

#include "metrics/metrics_server.h"
#include "metrics/socket_dir_guard.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = 60000;  // small shared CI machines: never a timing test
}

class TestSocketDir : public QObject {
  Q_OBJECT
  QTemporaryDir base;

  static QString dirName(const MetricsServer& s) {
    return QFileInfo(QFileInfo(s.socketPath()).path()).fileName();
  }
  QStringList socketDirs() const {
    return QDir(base.path())
        .entryList({QStringLiteral("ddpdesk-*")}, QDir::Dirs | QDir::NoDotAndDotDot);
  }
  // The processes whose parent is `parent` and whose program is now the fake worker (forked and
  // exec'd: a child between fork and exec still runs the monitor's program).
  static QList<qint64> execdRanks(qint64 parent) {
    QList<qint64> ranks;
    const QString worker = QFileInfo(fakeWorker()).canonicalFilePath();
    for (const QString& pid : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
      QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
      if (!stat.open(QIODevice::ReadOnly)) continue;
      // pid (comm) state ppid ...: the comm may hold spaces, so read after its closing ')'.
      const QByteArray line = stat.readAll();
      const QList<QByteArray> rest = line.mid(line.lastIndexOf(')') + 2).split(' ');
      if (rest.size() < 2 || rest[1].toLongLong() != parent) continue;
      if (QFileInfo(QStringLiteral("/proc/%1/exe").arg(pid)).canonicalFilePath() == worker)
        ranks << pid.toLongLong();
    }
    return ranks;
  }
  // Whether process `pid` has a descriptor open on `path`.
  static bool holdsFile(qint64 pid, const QString& path) {
    const QString fds = QStringLiteral("/proc/%1/fd").arg(pid);
    for (const QString& fd :
         QDir(fds).entryList(QDir::AllEntries | QDir::System | QDir::NoDotAndDotDot))
      if (QFileInfo(fds + QLatin1Char('/') + fd).symLinkTarget() == path) return true;
    return false;
  }
  // `ddpdesk` mid-run with the fake worker (a long run), its socket directory created.
  std::unique_ptr<QProcess> monitorMidRun(bool gui) {
    auto p = std::make_unique<QProcess>();
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert(QStringLiteral("XDG_RUNTIME_DIR"), base.path());
    e.insert(QStringLiteral("XDG_DATA_HOME"), base.filePath(QStringLiteral("data")));
    e.insert(QStringLiteral("XDG_CONFIG_HOME"), base.filePath(QStringLiteral("config")));
    e.insert(QStringLiteral("DDPDESK_WORKER"), fakeWorker());
    e.insert(QStringLiteral("FAKE_STEPS"), QStringLiteral("1000000"));
    e.insert(QStringLiteral("FAKE_STEP_MS"), QStringLiteral("5"));
    e.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p->setProcessEnvironment(e);
    const QStringList spec = {"--nproc", "2", "--task", "seed"};
    p->start(QStringLiteral(DDPDESK_BIN),
             QStringList{gui ? QStringLiteral("--start") : QStringLiteral("--headless")} + spec);
    if (!p->waitForStarted(kTimeout)) return nullptr;
    for (int i = 0; i < kTimeout / 20 && socketDirs().isEmpty(); ++i) QTest::qWait(20);
    return p;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(base.isValid());
    qputenv("XDG_RUNTIME_DIR", base.path().toUtf8());  // for the servers made in this process
  }
  void cleanup() {
    for (const QString& d : socketDirs()) QDir(base.filePath(d)).removeRecursively();
  }

  void closingRemovesTheDirectoryAndItsLock() {
    MetricsServer s;
    QVERIFY(s.listen(QStringLiteral("t")));
    const QString dir = QFileInfo(s.socketPath()).path();
    QCOMPARE(QFileInfo(dir).path(), base.path());
    QVERIFY(QFileInfo::exists(dir + QLatin1Char('/') + QLatin1String(SocketDirGuard::kLockName)));
    s.close();
    QVERIFY(!QFileInfo::exists(dir));
    QVERIFY(socketDirs().isEmpty());
  }

  void endingBySignalRemovesIt_data() {
    QTest::addColumn<bool>("gui");
    QTest::addColumn<int>("signo");
    QTest::newRow("headless SIGTERM") << false << SIGTERM;
    QTest::newRow("headless SIGINT") << false << SIGINT;
    QTest::newRow("headless SIGHUP") << false << SIGHUP;
    QTest::newRow("window SIGTERM") << true << SIGTERM;
    QTest::newRow("window SIGHUP") << true << SIGHUP;
  }
  void endingBySignalRemovesIt() {
    QFETCH(bool, gui);
    QFETCH(int, signo);
    auto p = monitorMidRun(gui);
    QVERIFY(p);
    QCOMPARE(socketDirs().size(), 1);
    ::kill(pid_t(p->processId()), signo);
    QVERIFY(p->waitForFinished(kTimeout));
    QVERIFY2(socketDirs().isEmpty(), qPrintable(socketDirs().join(' ')));
  }

  void aKilledMonitorsDirectoryIsSweptAtTheNextStart() {
    MetricsServer live;  // another monitor, alive: its directory must stay
    QVERIFY(live.listen(QStringLiteral("t")));
    const QString liveDir = dirName(live);
    auto p = monitorMidRun(false);
    QVERIFY(p);
    QTRY_COMPARE_WITH_TIMEOUT(socketDirs().size(), 2, kTimeout);
    QStringList killedDirs = socketDirs();
    killedDirs.removeAll(liveDir);
    // Killed once both ranks run the worker's program: a rank between fork and exec still holds
    // a copy of the lock's descriptor (a killed monitor's directory was once kept that way under
    // the sanitizers on a loaded machine). The ranks themselves hold none (close on exec), so
    // the lock dies with the monitor however long its ranks take to stop.
    QList<qint64> ranks;
    QTRY_VERIFY_WITH_TIMEOUT((ranks = execdRanks(p->processId())).size() == 2, kTimeout);
    const QString lock = QFileInfo(base.filePath(killedDirs.value(0)) + QLatin1Char('/') +
                                   QLatin1String(SocketDirGuard::kLockName))
                             .canonicalFilePath();
    QVERIFY(!lock.isEmpty());
    for (qint64 rank : ranks) QVERIFY2(!holdsFile(rank, lock), "a rank holds the monitor's lock");
    ::kill(pid_t(p->processId()), SIGKILL);
    QVERIFY(p->waitForFinished(kTimeout));
    QVERIFY(socketDirs().contains(killedDirs.value(0)));  // SIGKILL: nothing could run

    MetricsServer next;
    QVERIFY(next.listen(QStringLiteral("t")));
    const QStringList now = socketDirs();
    QVERIFY2(!now.contains(killedDirs.value(0)), qPrintable(now.join(' ')));
    QVERIFY(now.contains(liveDir));
    QVERIFY(now.contains(dirName(next)));
    QCOMPARE(now.size(), 2);
  }
};

DDPDESK_TEST_MAIN(TestSocketDir)
#include "test_socket_dir.moc"

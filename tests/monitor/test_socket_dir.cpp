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

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "metrics_server.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "socket_dir_guard.h"

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
  // Whether no process holds the owner lock in socket directory `dir` (what the sweep asks).
  bool lockIsFree(const QString& dir) const {
    const QByteArray path = QFile::encodeName(base.filePath(dir) + QLatin1Char('/') +
                                              QLatin1String(SocketDirGuard::kLockName));
    const int fd = ::open(path.constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return free;
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
    ::kill(pid_t(p->processId()), SIGKILL);
    QVERIFY(p->waitForFinished(kTimeout));
    QVERIFY(socketDirs().contains(killedDirs.value(0)));  // SIGKILL: nothing could run
    // The next start comes once nothing holds the dead monitor's lock: a rank it was forking
    // when the signal came holds a copy of the descriptor until its exec closes it (close on
    // exec), which under the sanitizers on a loaded machine outlasted waitForFinished().
    QTRY_VERIFY_WITH_TIMEOUT(lockIsFree(killedDirs.value(0)), kTimeout);

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

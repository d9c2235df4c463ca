// The spec's on_end command (`--on-end`) through `ddpdesk --headless` with the fake worker: the
// command records its environment, and each DDPDESK_* variable is checked for a finished, a
// failed and a stopped (SIGTERM) run; a command that fails is a warning and a line in monitor.log
// and leaves the run's exit code alone; one that outlives its limit (DDPDESK_ON_END_TIMEOUT_S) is
// killed with what it started, and ddpdesk exits without waiting it out; a followed run never
// runs the command its spec.json names.
#include <unistd.h>
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "wire.h"

using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = 120000;

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// A shell word for `text` (single quotes).
QString quoted(const QString& text) {
  QString q = text;
  q.replace(QLatin1String("'"), QLatin1String("'\\''"));
  return QLatin1Char('\'') + q + QLatin1Char('\'');
}

}  // namespace

class TestHeadlessOnEnd : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> data;

  std::unique_ptr<QProcess> launch(const QStringList& args,
                                   std::initializer_list<std::pair<const char*, QString>> env) {
    return startHeadless(QStringLiteral(DDPDESK_BIN), fakeWorker(), data->path(), args,
                         fakeEnv(env));
  }
  ProcessResult run(const QStringList& args,
                    std::initializer_list<std::pair<const char*, QString>> env) {
    return finishProcess(*launch(args, env), kTimeout);
  }
  static QString runDirIn(const QString& err) {
    return QRegularExpression(QStringLiteral("run directory (\\S+)")).match(err).captured(1);
  }
  QString envFile() const { return data->filePath(QStringLiteral("env.txt")); }
  // The command that records the DDPDESK_* part of its environment (and says so on stdout).
  QString recordEnv() const {
    return QStringLiteral("env | grep ^DDPDESK_ > %1; echo recorded").arg(quoted(envFile()));
  }
  // What the command recorded: DDPDESK_* variable -> value.
  QMap<QString, QString> recorded() const {
    QMap<QString, QString> vars;
    for (const QString& line : readText(envFile()).split(QLatin1Char('\n'), Qt::SkipEmptyParts))
      vars.insert(line.section(QLatin1Char('='), 0, 0), line.section(QLatin1Char('='), 1));
    return vars;
  }

 private Q_SLOTS:
  void init() { data = std::make_unique<QTemporaryDir>(); }

  void aFinishedRunTellsTheCommand() {
    const ProcessResult r =
        run({"--nproc", "2", "--name", "nightly", "--on-end", recordEnv()}, {{"FAKE_STEPS", "6"}});
    QCOMPARE(r.code, 0);
    const QString dir = runDirIn(r.err);
    QVERIFY2(!dir.isEmpty(), qPrintable(r.err));
    const auto vars = recorded();
    QCOMPARE(vars.value("DDPDESK_RUN_DIR"), dir);
    QCOMPARE(vars.value("DDPDESK_STATUS"), QStringLiteral("Finished"));
    QCOMPARE(vars.value("DDPDESK_EXIT_CODE"), QStringLiteral("0"));
    QCOMPARE(vars.value("DDPDESK_RUN_NAME"), QStringLiteral("nightly"));
    QVERIFY(vars.contains("DDPDESK_REASON"));
    QCOMPARE(vars.value("DDPDESK_REASON"), QString());
    // Its output in on-end.log, its start and end in monitor.log, after the run's ending.
    QCOMPARE(readText(dir + QStringLiteral("/on-end.log")), QStringLiteral("recorded\n"));
    const QString log = readText(dir + QStringLiteral("/monitor.log"));
    const int ended = log.indexOf(QLatin1String("run Finished"));
    const int started = log.indexOf(QLatin1String("on_end command started: env | grep"));
    QVERIFY2(ended >= 0 && started > ended, qPrintable(log));
    QVERIFY2(log.indexOf(QLatin1String("on_end command exited with code 0")) > started,
             qPrintable(log));
    QVERIFY(!r.err.contains(QLatin1String("warning")));
  }

  void aFailedRunTellsTheCommandWhy() {
    const ProcessResult r =
        run({"--nproc", "2", "--on-end", recordEnv()}, {{"FAKE_STEPS", "100000"},
                                                        {"FAKE_STEP_MS", "5"},
                                                        {"FAKE_CRASH_STEP", "4"},
                                                        {"FAKE_CRASH_RANK", "1"}});
    QCOMPARE(r.code, 1);
    const QString dir = runDirIn(r.err);
    const auto vars = recorded();
    QCOMPARE(vars.value("DDPDESK_RUN_DIR"), dir);
    QCOMPARE(vars.value("DDPDESK_STATUS"), QStringLiteral("Failed"));
    QCOMPARE(vars.value("DDPDESK_EXIT_CODE"), QStringLiteral("1"));
    // No --name: the run directory's name.
    QCOMPARE(vars.value("DDPDESK_RUN_NAME"), QFileInfo(dir).fileName());
    // The reason's first line (headless prints all of it after "run failed: ").
    const QString reason = vars.value("DDPDESK_REASON");
    QVERIFY2(reason.startsWith(QLatin1String("rank 1 exited with code 1")), qPrintable(reason));
    QVERIFY2(r.err.contains(QLatin1String("run failed: ") + reason), qPrintable(r.err));
  }

  // SIGTERM to ddpdesk: a graceful stop, exit 143, and the command is told 143 too.
  void aStoppedRunTellsTheCommandTheExitCode() {
    auto p = launch({"--nproc", "2", "--on-end", recordEnv()},
                    {{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QString err;
    const QString dir =
        waitForStderr(*p, QRegularExpression(QStringLiteral("run directory (\\S+)\n")), &err,
                      kTimeout)
            .captured(1);
    QVERIFY2(!dir.isEmpty(), qPrintable(err));
    QElapsedTimer t;
    t.start();
    while (!bothRanksStepping(dir + QStringLiteral("/metrics.jsonl")) && t.elapsed() < kTimeout)
      QTest::qWait(50);
    ::kill(pid_t(p->processId()), SIGTERM);
    const ProcessResult r = finishProcess(*p, kTimeout);
    QCOMPARE(r.code, 143);
    const auto vars = recorded();
    QCOMPARE(vars.value("DDPDESK_STATUS"), QStringLiteral("Stopped"));
    QCOMPARE(vars.value("DDPDESK_EXIT_CODE"), QStringLiteral("143"));
    QCOMPARE(vars.value("DDPDESK_RUN_DIR"), dir);
  }

  // A command that fails is the command's failure, not the run's.
  void aFailingCommandIsLoggedAndChangesNothing() {
    const ProcessResult r =
        run({"--nproc", "1", "--on-end", "echo no mail server >&2; exit 3"}, {{"FAKE_STEPS", "3"}});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.err.contains(QLatin1String("warning: on_end command exited with code 3")),
             qPrintable(r.err));
    const QString dir = runDirIn(r.err);
    QVERIFY2(readText(dir + QStringLiteral("/monitor.log"))
                 .contains(QLatin1String("warning: on_end command exited with code 3")),
             qPrintable(readText(dir + QStringLiteral("/monitor.log"))));
    QCOMPARE(readText(dir + QStringLiteral("/on-end.log")), QStringLiteral("no mail server\n"));
    QVERIFY(readText(dir + QStringLiteral("/status.json")).contains(QLatin1String("\"Finished\"")));
  }

  // Past its limit the command is killed with what it started (a `sleep` of its own), and ddpdesk
  // exits after the limit, not after the command.
  void aCommandPastItsLimitIsKilled() {
    const QString pidFile = data->filePath(QStringLiteral("sleep.pid"));
    const QString late = data->filePath(QStringLiteral("late"));
    QElapsedTimer t;
    t.start();
    const ProcessResult r = run({"--nproc", "1", "--on-end",
                                 QStringLiteral("sleep 120 & echo $! > %1; wait; touch %2")
                                     .arg(quoted(pidFile), quoted(late))},
                                {{"FAKE_STEPS", "3"}, {"DDPDESK_ON_END_TIMEOUT_S", "2"}});
    const qint64 took = t.elapsed();
    QCOMPARE(r.code, 0);
    QVERIFY2(took < 60000, qPrintable(QString::number(took)));  // not the command's 120 s
    QVERIFY2(r.err.contains(QLatin1String("waiting for the on_end command (at most 2 s)")),
             qPrintable(r.err));
    QVERIFY2(r.err.contains(QLatin1String("warning: on_end command killed after 2 s")),
             qPrintable(r.err));
    const QString dir = runDirIn(r.err);
    QVERIFY(readText(dir + QStringLiteral("/monitor.log"))
                .contains(QLatin1String("warning: on_end command killed after 2 s")));
    const qint64 sleepPid = readText(pidFile).trimmed().toLongLong();
    QVERIFY(sleepPid > 0);
    QTRY_VERIFY_WITH_TIMEOUT(notRunning(sleepPid), kTimeout);
    QVERIFY(!QFile::exists(late));
  }

  // Following a run: its spec.json's command is someone else's, and never runs here.
  void aFollowedRunNeverRunsItsCommand() {
    const QString dir = data->filePath(QStringLiteral("followed"));
    const QString marker = data->filePath(QStringLiteral("ran"));
    QVERIFY(QDir().mkpath(dir + QStringLiteral("/metrics")));
    ddpdesk::RunSpec spec = fakeSpec(1);
    spec.on_end = QStringLiteral("touch %1").arg(quoted(marker)).toStdString();
    QVERIFY(!writeFile(QDir(dir), QStringLiteral("spec.json"),
                       QByteArray::fromStdString(ddpdesk::to_json_text(spec)))
                 .isEmpty());
    ddpdesk::wire::Hello h;
    h.rank = 0;
    h.world = 1;
    h.pid = QCoreApplication::applicationPid();
    h.host = QSysInfo::machineHostName().toStdString();
    h.device = "cpu";
    ddpdesk::wire::Event done;
    done.rank = 0;
    done.event = "finished";
    QVERIFY(!writeFile(QDir(dir + QStringLiteral("/metrics")), QStringLiteral("rank-0.jsonl"),
                       QByteArray::fromStdString(ddpdesk::wire::encode(h) + "\n" +
                                                 ddpdesk::wire::encode(done) + "\n"))
                 .isEmpty());
    const ProcessResult r = run({"--attach", dir}, {});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains(QLatin1String("finished after")), qPrintable(r.out + r.err));
    QVERIFY(!QFile::exists(marker));
    QVERIFY2(!r.err.contains(QLatin1String("on_end command")), qPrintable(r.err));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestHeadlessOnEnd)
#include "test_headless_on_end.moc"

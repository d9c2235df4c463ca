// `ddpdesk --headless` refusing what another live ddpdesk owns, with the fake worker: resuming (or
// starting anew in) a run directory whose monitor is alive, and running a queue file another
// ddpdesk runs, give one line naming the directory or file and that monitor, exit 2, and nothing
// written; so does a queue file that cannot be written back.
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
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

class TestHeadlessBusy : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> data;

  std::unique_ptr<QProcess> launch(const QStringList& args,
                                   std::initializer_list<std::pair<const char*, QString>> env) {
    return startHeadless(QStringLiteral(DDPDESK_BIN), fakeWorker(),
                         data->filePath(QStringLiteral("xdg")), args, fakeEnv(env));
  }
  ProcessResult run(const QStringList& args) { return finishProcess(*launch(args, {}), kTimeout); }
  // A monitor whose ranks train until it is stopped; returns once they started.
  std::unique_ptr<QProcess> launchLongRun(const QStringList& args, QString* err) {
    auto p = launch(args, {{"FAKE_STEPS", "1000000"}, {"FAKE_STEP_MS", "5"}});
    const bool started =
        waitForStderr(*p, QRegularExpression(QStringLiteral("pids [0-9 ]+\n")), err, kTimeout)
            .hasMatch();
    return started ? std::move(p) : nullptr;
  }
  static void stop(QProcess& p) {
    p.terminate();  // SIGTERM: the ranks stop at their next step, the monitor exits
    finishProcess(p, kTimeout);
  }
  QString write(const QString& name, const QByteArray& text) {
    const QString path = data->filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(text);
    return path;
  }
  // The run directories under the monitor's data directory.
  QStringList runDirs() const {
    return QDir(data->filePath(QStringLiteral("xdg/ddpdesk/runs")))
        .entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  }
  static int lineCount(const QString& text) {
    return int(text.split(QLatin1Char('\n'), Qt::SkipEmptyParts).size());
  }
  static QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
  }

 private Q_SLOTS:
  void init() {
    data = std::make_unique<QTemporaryDir>();
    QVERIFY(data->isValid());
  }
  void cleanup() { data.reset(); }

  void aRunWhoseMonitorIsAliveIsNotResumedNorStartedAgain_data() {
    QTest::addColumn<QString>("how");
    QTest::newRow("--resume DIR") << QStringLiteral("resume");
    QTest::newRow("--run-dir DIR --resume DIR") << QStringLiteral("both");
  }
  void aRunWhoseMonitorIsAliveIsNotResumedNorStartedAgain() {
    QFETCH(QString, how);
    const QString dir = data->filePath(QStringLiteral("run"));
    QString err;
    auto first = launchLongRun({"--nproc", "1", "--run-dir", dir}, &err);
    QVERIFY2(first, qPrintable(err));
    // A checkpoint the run wrote earlier (the fake's own come at its stop): resumable but for
    // its monitor.
    QVERIFY(QDir(dir).mkpath(QStringLiteral("checkpoints")));
    QFile checkpoint(dir + QStringLiteral("/checkpoints/step-00000003.pt"));
    QVERIFY(checkpoint.open(QIODevice::WriteOnly) && checkpoint.write("step 3\n") > 0);
    checkpoint.close();
    const QByteArray logBefore = readAll(RunDirectory::monitorLogPath(dir));
    QStringList args = {"--nproc", "1", "--resume", dir};
    if (how == QLatin1String("both")) args << "--run-dir" << dir;
    const ProcessResult second = run(args);
    const QByteArray logAfter = readAll(RunDirectory::monitorLogPath(dir));
    const bool firstAlive = first->state() == QProcess::Running;
    const QString pid = QString::number(first->processId());
    stop(*first);
    QCOMPARE(second.code, 2);
    QCOMPARE(lineCount(second.err), 1);
    QVERIFY2(second.err.contains(QLatin1String("invalid --resume '") + dir + "'"),
             qPrintable(second.err));
    QVERIFY2(second.err.contains(QLatin1String("still going, watched by ddpdesk pid ") + pid),
             qPrintable(second.err));
    // The second monitor wrote nothing there, and the first trained on undisturbed.
    QCOMPARE(logAfter, logBefore);
    QVERIFY(firstAlive);
  }

  void aQueueAnotherDdpdeskRunsIsRefused() {
    const QString path =
        write(QStringLiteral("q.json"), R"({"entries": [{"spec": {}}, {"spec": {}}]})");
    QString err;
    auto first = launchLongRun({"--queue", path}, &err);
    QVERIFY2(first, qPrintable(err));
    const QByteArray fileBefore = readAll(path);
    const ProcessResult second = run({"--queue", path});
    const QByteArray fileAfter = readAll(path);
    const QStringList dirs = runDirs();
    const QString pid = QString::number(first->processId());
    stop(*first);
    QCOMPARE(second.code, 2);
    QCOMPARE(lineCount(second.err), 1);
    QVERIFY2(second.err.contains(QLatin1String("queue ") + path +
                                 " is already being run by ddpdesk pid " + pid),
             qPrintable(second.err));
    QCOMPARE(dirs.size(), 1);  // the first's first run, nothing of the second's
    QCOMPARE(fileAfter, fileBefore);
  }

  void aQueueFileThatCannotBeWrittenBackIsRefused() {
    const QString path = write(QStringLiteral("ro.json"), R"({"entries": [{"spec": {}}]})");
    const QByteArray before = readAll(path);
    // Root writes past permission bits; an immutable file refuses it too.
    const bool root = ::geteuid() == 0;
    const QStringList attr = {root ? QStringLiteral("+i") : QStringLiteral("-w"), path};
    if (QProcess::execute(root ? QStringLiteral("chattr") : QStringLiteral("chmod"), attr) != 0)
      QSKIP(
          "cannot make the queue file read-only here (chattr +i: the temporary folder's file "
          "system may not have it)");
    const ProcessResult r = run({"--queue", path});
    if (root) QProcess::execute(QStringLiteral("chattr"), {QStringLiteral("-i"), path});
    QCOMPARE(r.code, 2);
    QCOMPARE(lineCount(r.err), 1);
    QVERIFY2(r.err.contains(QLatin1String("cannot run queue ") + path + ": " + path +
                            " is not writable"),
             qPrintable(r.err));
    QVERIFY(runDirs().isEmpty());  // nothing started
    QCOMPARE(readAll(path), before);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestHeadlessBusy)
#include "test_headless_busy.moc"

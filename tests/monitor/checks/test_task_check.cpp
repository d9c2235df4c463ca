// The task check against the fake worker's canned `--check`: asynchronously (TaskCheck: no
// blocking, a newer request abandons the older one, a timeout is a clear failure) and
// synchronously (runTaskCheckNow, as headless uses it).
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "checks/task_check.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {

qint64 readPid(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return 0;
  const QByteArray text = f.readAll();
  return text.endsWith('\n') ? text.trimmed().toLongLong() : 0;  // the whole line is written
}

// The pid the fake's check writes once it started (its first act); 0 if it never does.
qint64 waitForPid(const QString& path) {
  qint64 pid = 0;
  // The caller asserts on the pid: 0 (never written) fails it there.
  (void)QTest::qWaitFor([&] { return (pid = readPid(path)) > 0; }, 20000);
  return pid;
}

}  // namespace

class TestTaskCheck : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> dir;

  QString file(const QString& name, const QByteArray& content = "fake\n") const {
    return writeFile(QDir(dir->path()), name, content);
  }
  RunSpec userSpec() const {
    RunSpec s;
    s.task = "script";
    s.model = file(QStringLiteral("model.pt")).toStdString();
    s.train_data = file(QStringLiteral("train.safetensors")).toStdString();
    return s;
  }

 private Q_SLOTS:
  void init() {
    dir = std::make_unique<QTemporaryDir>();
    qunsetenv("FAKE_CHECK_MS");
    qunsetenv("FAKE_CHECK_MODE");
    qunsetenv("FAKE_CHECK_PIDFILE");
    qunsetenv("FAKE_CHECK_WAIT");
  }

  void okArrivesWithoutBlocking() {
    // The fake answers only once this file exists, which the test makes after start() returned:
    // a start() that waited for the answer would come back after the fake's own limit (60 s),
    // with the answer in, however fast or slow the machine.
    const QString go = dir->filePath(QStringLiteral("answer-now"));
    qputenv("FAKE_CHECK_WAIT", go.toUtf8());
    RunSpec s = userSpec();
    s.eval_data = file(QStringLiteral("eval.safetensors")).toStdString();
    TaskCheck check;
    QSignalSpy done(&check, &TaskCheck::finished);
    QElapsedTimer t;
    t.start();
    check.start(fakeWorker(), s);
    QVERIFY2(t.elapsed() < 30000, "start() waited for the worker's answer");
    QVERIFY(check.running());
    QCOMPARE(check.result().status, TaskCheckResult::Status::Pending);
    QCOMPARE(done.count(), 0);
    file(QStringLiteral("answer-now"));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 20000);
    const TaskCheckResult r = done.first().first().value<TaskCheckResult>();
    QCOMPARE(r.status, TaskCheckResult::Status::Ok);
    QCOMPARE(check.result().trainSamples, 60000);
    QCOMPARE(check.result().evalSamples, 10000);
    QVERIFY(!check.running());
  }

  void badFileIsBadInputNamingTheField() {
    RunSpec s = userSpec();
    s.model = file(QStringLiteral("x.pt"), "bad not a TorchScript file (fake)\n").toStdString();
    TaskCheck check;
    QSignalSpy done(&check, &TaskCheck::finished);
    check.start(fakeWorker(), s);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 20000);
    QCOMPARE(check.result().status, TaskCheckResult::Status::BadInput);
    QCOMPARE(check.result().field, QStringLiteral("model"));
    QCOMPARE(check.result().error, QStringLiteral("invalid --model '%1': not a TorchScript file "
                                                  "(fake)")
                                       .arg(QString::fromStdString(s.model)));

    s = userSpec();
    s.eval_data = dir->filePath(QStringLiteral("missing.safetensors")).toStdString();
    check.start(fakeWorker(), s);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 20000);
    QCOMPARE(check.result().field, QStringLiteral("eval_data"));
  }

  void newerRequestAbandonsTheOlder() {
    const QString pidFile = dir->filePath(QStringLiteral("check.pid"));
    qputenv("FAKE_CHECK_PIDFILE", pidFile.toUtf8());
    qputenv("FAKE_CHECK_MS", "60000");
    TaskCheck check;
    QSignalSpy done(&check, &TaskCheck::finished);
    RunSpec slow = userSpec();
    slow.model = file(QStringLiteral("x.pt"), "bad old model\n").toStdString();
    check.start(fakeWorker(), slow);
    const qint64 older = waitForPid(pidFile);
    QVERIFY(older > 0);
    qunsetenv("FAKE_CHECK_PIDFILE");
    qputenv("FAKE_CHECK_MS", "0");
    check.start(fakeWorker(), userSpec());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 20000);
    QCOMPARE(check.result().status, TaskCheckResult::Status::Ok);
    // The older check was killed: its answer can never come.
    QTRY_VERIFY_WITH_TIMEOUT(notRunning(older), 20000);
    QCoreApplication::processEvents();
    QCOMPARE(done.count(), 1);
  }

  void cancelEmitsNothing() {
    const QString pidFile = dir->filePath(QStringLiteral("check.pid"));
    qputenv("FAKE_CHECK_PIDFILE", pidFile.toUtf8());
    qputenv("FAKE_CHECK_MS", "60000");
    TaskCheck check;
    QSignalSpy done(&check, &TaskCheck::finished);
    check.start(fakeWorker(), userSpec());
    const qint64 pid = waitForPid(pidFile);
    QVERIFY(pid > 0);
    check.cancel();
    QVERIFY(!check.running());
    QCOMPARE(check.result().status, TaskCheckResult::Status::Pending);
    QTRY_VERIFY_WITH_TIMEOUT(notRunning(pid), 20000);
    QCoreApplication::processEvents();
    QCOMPARE(done.count(), 0);
  }

  void failuresAreClear() {
    TaskCheck check;
    QSignalSpy done(&check, &TaskCheck::finished);
    check.start(QStringLiteral("/nonexistent/ddpdesk-worker"), userSpec());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 20000);
    QCOMPARE(check.result().status, TaskCheckResult::Status::Failed);
    QVERIFY(check.result().error.contains(QLatin1String("cannot run /nonexistent")));

    qputenv("FAKE_CHECK_MODE", "crash");
    check.start(fakeWorker(), userSpec());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 20000);
    QCOMPARE(check.result().error, QStringLiteral("ddpdesk-worker --check exited with code 1: "
                                                  "ddpdesk-worker: simulated check failure"));

    qputenv("FAKE_CHECK_MODE", "garbage");
    check.start(fakeWorker(), userSpec());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, 20000);
    QCOMPARE(check.result().status, TaskCheckResult::Status::Failed);

    qputenv("FAKE_CHECK_MODE", "hang");
    check.start(fakeWorker(), userSpec(), 400);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 4, 20000);
    QCOMPARE(check.result().status, TaskCheckResult::Status::Failed);
    QCOMPARE(check.result().error,
             QStringLiteral("ddpdesk-worker --check did not answer within 0.4 s"));
  }

  void synchronousForHeadless() {
    TaskCheckResult r = runTaskCheckNow(fakeWorker(), userSpec());
    QCOMPARE(r.status, TaskCheckResult::Status::Ok);
    RunSpec s = userSpec();
    s.train_data = "/nonexistent/train.safetensors";
    r = runTaskCheckNow(fakeWorker(), s);
    QCOMPARE(r.status, TaskCheckResult::Status::BadInput);
    QCOMPARE(r.error, QStringLiteral("invalid --train-data '/nonexistent/train.safetensors': no "
                                     "such file"));
    qputenv("FAKE_CHECK_MODE", "hang");
    r = runTaskCheckNow(fakeWorker(), userSpec(), 300);
    QCOMPARE(r.status, TaskCheckResult::Status::Failed);
    QVERIFY(r.error.contains(QLatin1String("did not answer")));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTaskCheck)
#include "test_task_check.moc"

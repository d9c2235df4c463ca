// RunController::attach("ssh://…") with real ranks started by hand on the host sshd runs on
// (tests/ssh/with_sshd.sh exports DDPDESK_SSH_COMMAND/PORT; skipped without them): the followed
// run reaches Running with every step once, and Stop reaches the remote ranks through
// `ssh host kill -TERM`: they vote, checkpoint and exit 0, and the run ends Stopped. Nothing is
// left behind: the mirror directory and the ssh process go with the controller.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include "hand_started_run.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "run/run_controller.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

class TestAttachSshStop : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    if (qEnvironmentVariableIsEmpty("DDPDESK_SSH_PORT"))
      QSKIP("needs a private sshd: run under tests/ssh/with_sshd.sh");
  }

  void stopReachesTheRemoteRanksGracefully() {
    QTemporaryDir dir;
    QTemporaryDir localTmp;  // the mirror's parent, to see it removed
    qputenv("TMPDIR", localTmp.path().toLocal8Bit());
    const QString url = QStringLiteral("ssh://root@127.0.0.1:%1%2")
                            .arg(qEnvironmentVariable("DDPDESK_SSH_PORT"), dir.path());
    {
      RunController c;
      QSignalSpy connected(&c, &RunController::remoteConnected);
      QString error;
      QVERIFY2(c.attach(url, &error), qPrintable(error));
      QVERIFY(c.isRemote());
      QVERIFY(connected.wait(60000));
      QCOMPARE(QDir(localTmp.path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 1);
      HandStartedRun run(QStringLiteral(DDPDESK_REAL_WORKER), dir.path(), 2,
                         {"--task", "seed", "--dataset-size", "400", "--epochs", "500"});
      QVERIFY(QTest::qWaitFor(
          [&] {  // steps can come before the other rank's hello: wait for both
            return c.state() == State::Running && c.store()->global().size() >= 5 &&
                   c.pids() == run.pids();
          },
          180000));
      c.stop();
      QTRY_VERIFY_WITH_TIMEOUT(RunController::isTerminal(c.state()), 180000);
      QCOMPARE(c.state(), State::Stopped);
      QVERIFY2(run.waitAllExited(60000), "a rank did not exit 0 after the graceful stop");
      QVERIFY(!QDir(dir.filePath("checkpoints")).entryList({"step-*.pt"}).isEmpty());
    }
    QCOMPARE(QDir(localTmp.path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 0);
    qunsetenv("TMPDIR");
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestAttachSshStop)
#include "test_attach_ssh_stop.moc"

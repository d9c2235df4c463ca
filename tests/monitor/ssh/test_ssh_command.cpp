// SshCommand against a real sshd (run under tests/ssh/with_sshd.sh, which exports
// DDPDESK_SSH_COMMAND and DDPDESK_SSH_PORT; skipped without them): argv quoted for the remote
// shell, stdout/stderr/exit code back, a timeout that kills ssh, and ssh's own failures (refused
// key, closed port, no client) as one line. No ssh process outlives a command.
#include <QProcess>
#include <QSignalSpy>
#include <QTcpServer>
#include <QtTest>

#include "qt_test_main.h"
#include "run/monitor_settings.h"
#include "ssh/ssh_command.h"

using namespace ddpdesk;

namespace {

SshTarget target(int port = 0) {
  SshTarget t;
  t.user = QStringLiteral("root");
  t.host = QStringLiteral("127.0.0.1");
  t.port = port ? port : qEnvironmentVariableIntValue("DDPDESK_SSH_PORT");
  return t;
}

SshCommand::Result run(SshCommand& c, const QStringList& argv, int timeoutMs = 60000) {
  QSignalSpy done(&c, &SshCommand::finished);
  c.start(argv, timeoutMs);
  if (!done.wait(120000)) return {};
  return done.at(0).at(0).value<SshCommand::Result>();
}

// ssh processes using this test's client config that are still running.
int sshLeft() {
  QProcess p;
  p.start(
      QStringLiteral("pgrep"),
      {QStringLiteral("-f"), QStringLiteral("ssh -F ") + qEnvironmentVariable("DDPDESK_SSH_DIR")});
  p.waitForFinished();
  return p.readAllStandardOutput().count('\n');
}

}  // namespace

class TestSshCommand : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    qRegisterMetaType<SshCommand::Result>();
    if (qEnvironmentVariableIsEmpty("DDPDESK_SSH_PORT"))
      QSKIP("needs a private sshd: run under tests/ssh/with_sshd.sh");
  }

  void outputErrorAndExitCodeComeBack() {
    SshCommand c(target());
    // Words with spaces and quotes arrive as one argument each.
    const auto r = run(
        c, {"sh", "-c", "printf '%s|' \"$@\"; echo oops >&2; exit 3", "x", "a b", "it's", "$HOME"});
    QVERIFY(r.ran);
    QVERIFY(!r.ok);
    QCOMPARE(r.exitCode, 3);
    QCOMPARE(r.out, QByteArray("a b|it's|$HOME|"));
    QVERIFY(r.err.contains("oops"));
    QVERIFY2(r.error.contains("exit code 3") && r.error.contains("oops"), qPrintable(r.error));
    const auto ok = run(c, {"true"});
    QVERIFY(ok.ok);
    QVERIFY(ok.error.isEmpty());
  }

  void aCommandPastItsTimeIsKilled() {
    SshCommand c(target());
    const auto r = run(c, {"sleep", "60"}, 1500);
    QVERIFY(!r.ok && !r.ran);
    QVERIFY2(r.error.contains("timed out"), qPrintable(r.error));
    QTRY_COMPARE(sshLeft(), 0);
  }

  void sshsOwnFailuresAreOneLine() {
    QTcpServer probe;  // a port nothing listens on once closed
    probe.listen(QHostAddress::LocalHost, 0);
    const int closed = probe.serverPort();
    probe.close();
    {
      SshCommand c(target(closed));
      const auto r = run(c, {"true"});
      QVERIFY(!r.ran);
      QVERIFY2(r.error.contains("Connection refused") && !r.error.contains('\n'),
               qPrintable(r.error));
    }
    // The ssh command is a monitor setting, parsed once: another one is installed, not exported.
    const MonitorSettings usual = monitorSettings();
    MonitorSettings other = usual;
    other.sshCommand = QProcess::splitCommand(qEnvironmentVariable("DDPDESK_SSH_REFUSED"));
    setMonitorSettings(other);
    {
      SshCommand c(target());
      const auto r = run(c, {"true"});
      QVERIFY2(!r.ran && r.error.contains("Permission denied"), qPrintable(r.error));
    }
    other.sshCommand = QStringList{QStringLiteral("/nonexistent/ssh")};
    setMonitorSettings(other);
    {
      SshCommand c(target());
      const auto r = run(c, {"true"});
      QVERIFY2(!r.ran && r.error.contains("cannot run the ssh client '/nonexistent/ssh'"),
               qPrintable(r.error));
    }
    setMonitorSettings(usual);
  }

  void destroyingItKillsTheCommand() {
    {
      SshCommand c(target());
      c.start({"sleep", "60"});
      QTRY_COMPARE(sshLeft(), 1);
    }
    QCOMPARE(sshLeft(), 0);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestSshCommand)
#include "test_ssh_command.moc"

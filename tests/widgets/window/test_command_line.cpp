// The `ddpdesk` command line is one definition for the window and the terminal: the same bad
// input gets the same one line and exit code 2 from `ddpdesk` with a display (the window's
// path, offscreen here) as from `ddpdesk --headless`, and nothing starts. The window alone
// refuses --queue and --sweep (they run in the terminal).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "qt_test_main.h"

namespace {

struct Result {
  int code = -1;
  QString err;
};

Result runDdpdesk(const QStringList& args, const QString& home) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  env.insert(QStringLiteral("XDG_DATA_HOME"), home + QStringLiteral("/data"));
  env.insert(QStringLiteral("XDG_CONFIG_HOME"), home + QStringLiteral("/config"));
  env.insert(QStringLiteral("XDG_RUNTIME_DIR"), home);
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(DDPDESK_BIN), args);
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
    return {};
  }
  return {p.exitCode(), QString::fromLocal8Bit(p.readAllStandardError())};
}

}  // namespace

class TestCommandLine : public QObject {
  Q_OBJECT
  QTemporaryDir home;

 private Q_SLOTS:
  void sameAnswerInTheWindowAndTheTerminal_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("line");
    const QString dir = home.path();
    const QString missing = home.filePath(QStringLiteral("missing"));
    QTest::newRow("attach with a run flag")
        << QStringList{"--attach", dir, "--epochs", "3"}
        << "ddpdesk: invalid --epochs with --attach: a followed run keeps the flags it was "
           "started with";
    QTest::newRow("attach with start")
        << QStringList{"--attach", dir, "--start"}
        << "ddpdesk: invalid --start with --attach: a followed run keeps the flags it was "
           "started with";
    QTest::newRow("attach to no directory")
        << QStringList{"--attach", missing}
        << QStringLiteral("ddpdesk: invalid --attach '%1': not a directory").arg(missing);
    QTest::newRow("attach to nothing")
        << QStringList{"--attach", ""} << "ddpdesk: invalid --attach '': must be a run directory";
    QTest::newRow("bad field") << QStringList{"--batch-size", "0"}
                               << "ddpdesk: invalid --batch-size '0': must be an integer from 1 "
                                  "to 65536";
  }

  void sameAnswerInTheWindowAndTheTerminal() {
    QFETCH(QStringList, args);
    QFETCH(QString, line);
    const Result window = runDdpdesk(args, home.path());
    const Result terminal = runDdpdesk(QStringList{"--headless"} + args, home.path());
    QCOMPARE(window.code, 2);
    QCOMPARE(terminal.code, 2);
    QCOMPARE(terminal.err.trimmed(), line);
    QCOMPARE(window.err.trimmed(), line);
    QVERIFY(!QDir(home.filePath(QStringLiteral("data/ddpdesk/runs"))).exists());
  }

  void theWindowSendsQueuesToTheTerminal() {
    const Result r = runDdpdesk({"--queue", home.filePath(QStringLiteral("q.json"))}, home.path());
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.trimmed(),
             QStringLiteral("ddpdesk: --queue and --sweep run in the terminal: add --headless"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestCommandLine)
#include "test_command_line.moc"

// The `ddpdesk` command line is one definition for the window and the terminal: the same bad
// input gets the same one line and exit code 2 from `ddpdesk` with a display (the window's
// path, offscreen here) as from `ddpdesk --headless`, and nothing starts. The window alone
// refuses --queue and --sweep (they run in the terminal). A --resume is checked before the
// window opens, as the terminal checks it before it starts. The window's plain flags change
// the spec it remembers; --config and --resume give a whole spec.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "qt_test_main.h"

namespace {

struct Result {
  int code = -1;
  QString err;
};

Result runDdpdesk(const QStringList& args, const QString& home,
                  const QProcessEnvironment& extra = {}) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(extra);
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
    // The worker's dry run judges a resume (a build without the engine has none to ask).
    if (QFileInfo::exists(QFileInfo(QStringLiteral(DDPDESK_BIN)).dir().filePath("ddpdesk-worker")))
      QTest::newRow("resume nothing")
          << QStringList{"--resume", missing}
          << QStringLiteral("ddpdesk: invalid --resume '%1': no such run directory or file")
                 .arg(missing);
    // CLI11's own complaints, each said as one line naming the flag.
    QTest::newRow("unknown option")
        << QStringList{"--nrpoc", "2"} << "ddpdesk: unknown option --nrpoc (did you mean --nproc?)";
    QTest::newRow("unknown option, nothing near")
        << QStringList{"--frobnicate"} << "ddpdesk: unknown option --frobnicate";
    QTest::newRow("no value") << QStringList{"--batch-size"}
                              << "ddpdesk: invalid --batch-size: needs a value";
    QTest::newRow("next flag taken for the value")
        << QStringList{"--batch-size", "--epochs", "2"}
        << "ddpdesk: invalid --batch-size: needs a value, not the flag --epochs";
    QTest::newRow("given twice") << QStringList{"--batch-size", "8", "--batch-size=16"}
                                 << "ddpdesk: invalid --batch-size: given 2 times (once at most)";
    QTest::newRow("stray argument")
        << QStringList{"--epochs", "2", "3"} << "ddpdesk: unexpected argument '3' after 2";
    QTest::newRow("number too small")
        << QStringList{"--lr", "1e-400"}
        << "ddpdesk: invalid --lr '1e-400': is too close to 0 for a number; must be a number "
           "greater than 0 and at most 10";
    QTest::newRow("number too large")
        << QStringList{"--weight-decay", "1e400"}
        << "ddpdesk: invalid --weight-decay '1e400': is too large for a number; must be a number "
           "from 0 to 1";
    // A config file that is no JSON object says why, as --queue does.
    const auto write = [&](const QString& name, const QByteArray& text) {
      QFile f(home.filePath(name));
      if (f.open(QIODevice::WriteOnly)) f.write(text);
      return f.fileName();
    };
    const QString comma = write(QStringLiteral("comma.json"), R"({"epochs": 2,})");
    QTest::newRow("config with a trailing comma")
        << QStringList{"--config", comma}
        << QStringLiteral(
               "ddpdesk: invalid --config '%1': is not valid JSON (at line 1, column "
               "14: syntax error while parsing object key - unexpected '}'; expected "
               "string literal)")
               .arg(comma);
    const QString empty = write(QStringLiteral("empty.json"), "\n");
    QTest::newRow("empty config")
        << QStringList{"--config", empty}
        << QStringLiteral("ddpdesk: invalid --config '%1': is empty").arg(empty);
    QTest::newRow("config that is a directory")
        << QStringList{"--config", dir}
        << QStringLiteral("ddpdesk: invalid --config '%1': is a directory, not a JSON file")
               .arg(dir);
    QDir(dir).mkpath(QStringLiteral("broken"));
    const QString broken = home.filePath(QStringLiteral("broken"));
    write(QStringLiteral("broken/spec.json"), R"({"epochs": )");
    QTest::newRow("resume with a broken spec.json")
        << QStringList{"--resume", broken}
        << QStringLiteral(
               "ddpdesk: invalid --resume '%1': its spec.json is not valid JSON (at "
               "line 1, column 12: syntax error while parsing value - unexpected end "
               "of input; expected '[', '{', or a literal)")
               .arg(broken);
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

  // A Fashion-MNIST run without its files is refused before anything starts: no run directory,
  // no ranks, nothing in the history.
  void theTerminalRefusesAMissingDataSet() {
    QProcessEnvironment env;
    env.insert(QStringLiteral("DDPDESK_FMNIST_DIR"), home.filePath(QStringLiteral("none")));
    const Result r =
        runDdpdesk({"--headless", "--nproc", "2", "--task", "fmnist-mlp", "--dataset-size", "100"},
                   home.path(), env);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.trimmed(),
             QStringLiteral("ddpdesk: Fashion-MNIST file not found: %1/train-images-idx3-ubyte.gz "
                            "(install dataset-fashion-mnist, or set DDPDESK_FMNIST_DIR)")
                 .arg(home.filePath(QStringLiteral("none"))));
    QVERIFY(!QDir(home.filePath(QStringLiteral("data/ddpdesk/runs"))).exists());
  }

  // The window's plain flags change the spec it remembers (here a Fashion-MNIST task, whose
  // data set has 60000 images); a --config is a whole spec of its own (the default task, seed).
  void theWindowsFlagsChangeTheRememberedSpec() {
    QTemporaryDir own;
    QDir().mkpath(own.filePath(QStringLiteral("config/ddpdesk")));
    QFile conf(own.filePath(QStringLiteral("config/ddpdesk/ddpdesk.conf")));
    QVERIFY(conf.open(QIODevice::WriteOnly));
    conf.write("[form]\nlastSpec=\"{\\\"task\\\":\\\"fmnist-mlp\\\",\\\"epochs\\\":3}\"\n");
    conf.close();
    Result r = runDdpdesk({"--dataset-size", "2000000"}, own.path());
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.trimmed(),
             QStringLiteral("ddpdesk: invalid --dataset-size '2000000': must be at "
                            "most 60000 for Fashion-MNIST (its training images)"));
    QFile config(own.filePath(QStringLiteral("c.json")));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(R"({"epochs": 2})");
    config.close();
    r = runDdpdesk({"--config", config.fileName(), "--dataset-size", "2000000"}, own.path());
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.trimmed(),
             QStringLiteral("ddpdesk: invalid --dataset-size '2000000': must be at "
                            "most 1000000 for the seed task"));
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

// A stop signal to the window (SIGTERM from `kill` or a session's end, SIGHUP from a closed
// terminal, SIGINT from Ctrl+C where it was started) ends it as Close with "stop the run" does:
// the ranks stop gracefully at a step boundary, the run is recorded as stopped, and the window
// exits 0 once every rank is gone. Without this the window died of the signal and its ranks lost
// the run. The real `ddpdesk` binary on the offscreen platform, with the fake worker.
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

#include "qt_test_main.h"
#include "run/run_directory.h"

using namespace ddpdesk;

class TestWindowSignals : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void aStopSignalStopsTheRunAndClosesTheWindow_data() {
    QTest::addColumn<int>("signo");
    QTest::newRow("SIGTERM") << SIGTERM;
    QTest::newRow("SIGHUP") << SIGHUP;
    QTest::newRow("SIGINT") << SIGINT;
  }

  void aStopSignalStopsTheRunAndClosesTheWindow() {
    QFETCH(int, signo);
    QTemporaryDir home;
    QVERIFY(home.isValid());
    QProcess gui;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_DATA_HOME"), home.filePath(QStringLiteral("data")));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("XDG_RUNTIME_DIR"), home.path());
    env.insert(QStringLiteral("DDPDESK_WORKER"), QStringLiteral(DDPDESK_FAKE_WORKER));
    env.insert(QStringLiteral("FAKE_STEPS"), QStringLiteral("1000000"));
    env.insert(QStringLiteral("FAKE_STEP_MS"), QStringLiteral("5"));
    gui.setProcessEnvironment(env);
    gui.start(QStringLiteral(DDPDESK_BIN),
              {"--task", "seed", "--nproc", "2", "--name", "signalled", "--start"});
    QVERIFY(gui.waitForStarted());
    // Training: the run's metrics file has steps of both ranks.
    const QString runs = home.filePath(QStringLiteral("data/ddpdesk/runs"));
    QString runDir;
    const auto training = [&] {
      const QStringList dirs = QDir(runs).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
      if (dirs.isEmpty()) return false;
      runDir = runs + QLatin1Char('/') + dirs.first();
      QFile m(runDir + QStringLiteral("/metrics.jsonl"));
      if (!m.open(QIODevice::ReadOnly)) return false;
      bool stepped[2] = {false, false};
      for (const QByteArray& line : m.readAll().split('\n')) {
        const QJsonObject o = QJsonDocument::fromJson(line).object();
        const int rank = o.value(QStringLiteral("rank")).toInt(-1);
        if (o.value(QStringLiteral("type")) == QStringLiteral("step") && (rank == 0 || rank == 1))
          stepped[rank] = true;
      }
      return stepped[0] && stepped[1];
    };
    QVERIFY2(QTest::qWaitFor(training, 60000), qPrintable(gui.readAllStandardError()));
    ::kill(pid_t(gui.processId()), signo);
    QVERIFY2(gui.waitForFinished(60000), "the window did not close");
    QCOMPARE(gui.exitStatus(), QProcess::NormalExit);  // not killed by the signal
    QCOMPARE(gui.exitCode(), 0);
    const std::optional<RunRecord> record = RunDirectory::readRecord(runDir);
    QVERIFY(record && record->status);
    QCOMPARE(record->status->state, QStringLiteral("Stopped"));
    QCOMPARE(record->status->exitCodes, (QList<int>{0, 0}));  // graceful, not killed
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestWindowSignals)
#include "test_window_signals.moc"

// `ddpdesk --headless` as a user runs it, with DDPDESK_WORKER pointing at the fake worker: exit
// codes 0 / 1 / 2 / 130, output, nothing written on bad input, and no rank left behind, even
// when the monitor itself is killed (PR_SET_PDEATHSIG).
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

using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = 120000;
}

class TestHeadless : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> data;

  std::unique_ptr<QProcess> launch(const QStringList& args,
                                   std::initializer_list<std::pair<const char*, QString>> env) {
    return startHeadless(QStringLiteral(DDPDESK_BIN), fakeWorker(), data->path(), args,
                         fakeEnv(env));
  }
  using Result = ProcessResult;
  Result run(const QStringList& args, std::initializer_list<std::pair<const char*, QString>> env) {
    return finishProcess(*launch(args, env), kTimeout);
  }
  // The rank pids headless announces on stderr ("started N rank(s) of WORKER, pids a b").
  static QList<qint64> pidsIn(const QString& err) {
    return pidList(QRegularExpression(QStringLiteral("pids ([0-9 ]+)")).match(err).captured(1));
  }
  // Reads stderr until the ranks were started, returns their pids.
  static QList<qint64> waitForStart(QProcess& p, QString* err) {
    return pidList(
        waitForStderr(p, QRegularExpression(QStringLiteral("pids ([0-9 ]+)\n")), err, kTimeout)
            .captured(1));
  }
  // Waits until `sig`, sent to `pid` with kill(), has been delivered (its handler has run): it is
  // no longer in the process's pending set (ShdPnd in /proc). Polled tightly: the caller's next
  // signal follows at once.
  static bool waitUntilDelivered(pid_t pid, int sig) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < kTimeout) {
      QFile f(QStringLiteral("/proc/%1/status").arg(pid));
      if (!f.open(QIODevice::ReadOnly)) return false;
      bool pending = false;
      for (const QByteArray& line : f.readAll().split('\n'))
        if (line.startsWith("ShdPnd:") || line.startsWith("SigPnd:"))
          pending |= (line.mid(7).trimmed().toULongLong(nullptr, 16) >> (sig - 1)) & 1;
      if (!pending) return true;
      ::usleep(100);
    }
    return false;
  }
  // Waits until every rank's log shows a step: their signal handlers are in place, so a stop
  // is graceful rather than racing the ranks' start-up.
  bool waitForTraining(int ranks) const {
    for (int i = 0; i < kTimeout / 50; ++i) {
      const QString runs = data->filePath(QStringLiteral("ddpdesk/runs"));
      int training = 0;
      for (const auto& run : QDir(runs).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
        for (int r = 0; r < ranks; ++r) {
          QFile log(QStringLiteral("%1/%2/rank-%3.log").arg(runs, run).arg(r));
          if (log.open(QIODevice::ReadOnly) && log.readAll().contains(": step 2/")) ++training;
        }
      if (training == ranks) return true;
      QTest::qWait(50);
    }
    return false;
  }
  bool runsDirExists() const { return QDir(data->filePath(QStringLiteral("ddpdesk"))).exists(); }

 private Q_SLOTS:
  void init() { data = std::make_unique<QTemporaryDir>(); }

  void finishedRunExitsZero() {
    const Result r = run({"--nproc", "2", "--epochs", "2"}, {{"FAKE_STEPS", "20"}});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains(QLatin1String("epoch 2/2  step 20/20")), qPrintable(r.out));
    QVERIFY(r.out.contains(QLatin1String("finished after")));
    QVERIFY(r.out.contains(QLatin1String("exited with code 0")));
    QVERIFY(allGone(pidsIn(r.err)));
    QCOMPARE(pidsIn(r.err).size(), 2);
  }

  void failedRunExitsOne() {
    const Result r = run({"--nproc", "2"}, {{"FAKE_STEPS", "100000"},
                                            {"FAKE_STEP_MS", "5"},
                                            {"FAKE_CRASH_STEP", "4"},
                                            {"FAKE_CRASH_RANK", "1"}});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(QLatin1String("run failed: rank 1 exited with code 1")),
             qPrintable(r.err));
    QVERIFY(r.err.contains(QLatin1String("simulated failure at step 4")));
    QVERIFY(allGone(pidsIn(r.err)));
  }

  void resumingARunDirectoryKeepsItsSpec() {
    const Result first =
        run({"--nproc", "2", "--epochs", "2", "--batch-size", "3", "--name", "alpha"},
            {{"FAKE_STEPS", "20"}});
    QCOMPARE(first.code, 0);
    const auto dir = QRegularExpression(QStringLiteral("run directory (\\S+)")).match(first.err);
    QVERIFY(dir.hasMatch());
    // The fake checkpoints only when stopped; this one stands in for a real checkpoint.
    QVERIFY(QDir().mkpath(dir.captured(1) + QStringLiteral("/checkpoints")));
    QFile ckpt(dir.captured(1) + QStringLiteral("/checkpoints/step-00000010.pt"));
    QVERIFY(ckpt.open(QIODevice::WriteOnly));
    ckpt.write("step 10\n");
    ckpt.close();
    // Only --resume and the one thing to change: the rest comes from the run's spec.json.
    const Result again =
        run({"--resume", dir.captured(1), "--epochs", "3"}, {{"FAKE_STEPS", "20"}});
    QCOMPARE(again.code, 0);
    QVERIFY2(again.err.contains(QLatin1String("started 2 rank(s)")), qPrintable(again.err));
    QVERIFY(again.err.contains(QLatin1String("run directory ") + dir.captured(1)));
    QFile specFile(dir.captured(1) + QStringLiteral("/spec.json"));
    QVERIFY(specFile.open(QIODevice::ReadOnly));
    const ddpdesk::SpecResult spec = ddpdesk::parse_run_spec(specFile.readAll().toStdString());
    QVERIFY(spec.ok());
    QCOMPARE(spec.spec.nproc, 2);
    QCOMPARE(spec.spec.batch_size, 3);
    QCOMPARE(spec.spec.epochs, 3);
    QCOMPARE(spec.spec.name, std::string("alpha"));
  }

  // An on/off field is a flag: `--tensorboard` alone, before another flag, turns it on;
  // `--no-tensorboard` turns it off again on a resume that otherwise keeps the run's spec.
  void onOffFieldsAreFlags() {
    const Result first =
        run({"--nproc", "1", "--tensorboard", "--name", "flagged"}, {{"FAKE_STEPS", "5"}});
    QVERIFY2(first.code == 0, qPrintable(first.err));
    const auto dir = QRegularExpression(QStringLiteral("run directory (\\S+)")).match(first.err);
    QVERIFY(dir.hasMatch());
    const auto spec = [&] {
      QFile f(dir.captured(1) + QStringLiteral("/spec.json"));
      return f.open(QIODevice::ReadOnly) ? ddpdesk::parse_run_spec(f.readAll().toStdString())
                                         : ddpdesk::SpecResult();
    };
    QVERIFY(spec().ok());
    QCOMPARE(spec().spec.tensorboard, true);
    QCOMPARE(spec().spec.name, std::string("flagged"));
    QVERIFY(QDir().mkpath(dir.captured(1) + QStringLiteral("/checkpoints")));
    QFile ckpt(dir.captured(1) + QStringLiteral("/checkpoints/step-00000005.pt"));
    QVERIFY(ckpt.open(QIODevice::WriteOnly));
    ckpt.write("step 5\n");
    ckpt.close();
    const Result again = run({"--resume", dir.captured(1), "--no-tensorboard", "--epochs", "2"},
                             {{"FAKE_STEPS", "10"}});
    QVERIFY2(again.code == 0, qPrintable(again.err));
    QCOMPARE(spec().spec.tensorboard, false);
    QCOMPARE(spec().spec.name, std::string("flagged"));
    // Both at once is one line, exit 2.
    const Result both = run({"--tensorboard", "--no-tensorboard"}, {});
    QCOMPARE(both.code, 2);
    QVERIFY2(both.err.startsWith(QLatin1String("ddpdesk: ")) &&
                 both.err.contains(QLatin1String("excludes")) && both.err.count('\n') == 1,
             qPrintable(both.err));
  }

  void badInputExitsTwoAndWritesNothing_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("field");
    QTest::newRow("batch size") << QStringList{"--batch-size", "0"} << "--batch-size";
    QTest::newRow("nproc") << QStringList{"--nproc", "x"} << "--nproc";
    QTest::newRow("task") << QStringList{"--task", "imagenet"} << "--task";
    QTest::newRow("unknown flag") << QStringList{"--bogus", "1"} << "--bogus";
    // What only this machine can tell, refused before a rank is spawned.
    QTest::newRow("metrics file nowhere")
        << QStringList{"--metrics-file", "/nonexistent/dir/m.jsonl"} << "--metrics-file";
  }
  void badInputExitsTwoAndWritesNothing() {
    QFETCH(QStringList, args);
    QFETCH(QString, field);
    const Result r = run(args, {});
    QCOMPARE(r.code, 2);
    const QStringList lines = r.err.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].contains(field), qPrintable(lines[0]));
    QVERIFY(!runsDirExists());
  }

  // A run directory that cannot be made: bad input, the reason in the one line.
  void runDirectoryThatCannotBeMadeExitsTwoSayingWhy() {
    const QString file = data->filePath(QStringLiteral("a-file"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const QList<QPair<QString, QString>> cases = {
        {file, QStringLiteral("Not a directory")},
        {data->filePath(QString(260, QLatin1Char('n'))), QStringLiteral("File name too long")}};
    for (const auto& [dir, why] : cases) {
      const Result r = run({"--nproc", "1", "--run-dir", dir}, {});
      QCOMPARE(r.code, 2);
      const QStringList lines = r.err.split('\n', Qt::SkipEmptyParts);
      QCOMPARE(lines.size(), 1);
      QVERIFY2(lines[0].contains(QStringLiteral("invalid --run-dir '%1'").arg(dir)) &&
                   lines[0].endsWith(why),
               qPrintable(lines[0]));
    }
  }

  // A worker rank that exits 0 without ever connecting, or without saying it finished, has not
  // trained: the run failed, naming the rank and what it did not do.
  void rankThatEndsUnsaidFailsTheRun() {
    const Result never =
        finishProcess(*startHeadless(QStringLiteral(DDPDESK_BIN), QStringLiteral("/bin/true"),
                                     data->path(), {"--nproc", "1"}),
                      kTimeout);
    QCOMPARE(never.code, 1);
    QVERIFY2(never.err.contains(QLatin1String("run failed: rank 0 exited with code 0 without ever "
                                              "connecting to the monitor")),
             qPrintable(never.err));
    QVERIFY(never.out.contains(QLatin1String("failed after")));

    const Result unfinished = run({"--nproc", "2"}, {{"FAKE_STEPS", "40"},
                                                     {"FAKE_STEP_MS", "5"},
                                                     {"FAKE_CRASH_STEP", "3"},
                                                     {"FAKE_CRASH_RANK", "1"},
                                                     {"FAKE_CRASH_CODE", "0"}});
    QCOMPARE(unfinished.code, 1);
    QVERIFY2(unfinished.err.contains(QLatin1String("run failed: rank 1 exited with code 0 without "
                                                   "a finished event")),
             qPrintable(unfinished.err));
  }

  void cudaRunsThisMachineCannotHoldExitTwoAndWriteNothing_data() {
    QTest::addColumn<QString>("gpus");
    QTest::addColumn<QString>("nproc");
    QTest::addColumn<QString>("message");
    QTest::newRow("no GPU")
        << "0"
        << "1"
        << "invalid --device 'cuda': needs a CUDA GPU and this machine has none";
    QTest::newRow("too few") << "2"
                             << "3"
                             << "invalid --nproc '3': must be at most 2: a CUDA run uses one GPU "
                                "per rank and this machine has 2 GPU(s)";
  }
  void cudaRunsThisMachineCannotHoldExitTwoAndWriteNothing() {
    QFETCH(QString, gpus);
    QFETCH(QString, nproc);
    QFETCH(QString, message);
    const Result r = run({"--device", "cuda", "--nproc", nproc}, {{"FAKE_GPUS", gpus}});
    QCOMPARE(r.code, 2);
    const QStringList lines = r.err.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].contains(message), qPrintable(lines[0]));
    QVERIFY(!runsDirExists());
  }

  void cudaRunThatFitsStarts() {
    const Result r =
        run({"--device", "cuda", "--nproc", "2"}, {{"FAKE_GPUS", "2"}, {"FAKE_STEPS", "5"}});
    QCOMPARE(r.code, 0);
    QCOMPARE(pidsIn(r.err).size(), 2);
  }

  // A user task's files are checked by the worker's dry run (`--check`, here the fake's canned
  // one) before any rank is spawned; the worker's line is the error, as for any bad input.
  void userTaskFilesTheCheckRejectsExitTwoAndWriteNothing() {
    QFile train(data->filePath(QStringLiteral("train.safetensors")));
    QVERIFY(train.open(QIODevice::WriteOnly));
    train.write("fake\n");
    train.close();
    const QString model = data->filePath(QStringLiteral("missing.pt"));
    const Result r =
        run({"--task", "script", "--model", model, "--train-data", train.fileName()}, {});
    QCOMPARE(r.code, 2);
    const QStringList lines = r.err.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1);
    QCOMPARE(lines[0], QStringLiteral("ddpdesk: invalid --model '%1': no such file").arg(model));
    QVERIFY(!runsDirExists());
  }

  void userTaskThatPassesTheCheckStarts() {
    QFile model(data->filePath(QStringLiteral("model.pt")));
    QVERIFY(model.open(QIODevice::WriteOnly));
    model.write("fake\n");
    model.close();
    const Result r = run({"--task", "script", "--model", model.fileName(), "--train-data",
                          model.fileName(), "--nproc", "2"},
                         {{"FAKE_STEPS", "5"}});
    QCOMPARE(r.code, 0);
    QCOMPARE(pidsIn(r.err).size(), 2);
    // A check that cannot answer is not bad input: a warning, and the ranks say the rest.
    const Result w =
        run({"--task", "script", "--model", model.fileName(), "--train-data", model.fileName()},
            {{"FAKE_STEPS", "5"}, {"FAKE_CHECK_MODE", "crash"}});
    QCOMPARE(w.code, 0);
    QVERIFY2(w.err.contains(QLatin1String("warning: could not check the task's files: "
                                          "ddpdesk-worker --check exited with code 1")),
             qPrintable(w.err));
  }

  void badConfigFileExitsTwo() {
    QFile cfg(data->filePath(QStringLiteral("run.json")));
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.write(R"({"task":"seed","epochs":-1})");
    cfg.close();
    const Result r = run({"--config", cfg.fileName()}, {});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QLatin1String("epochs")), qPrintable(r.err));
    QVERIFY(!runsDirExists());
  }

  void helpExitsZero() {
    const Result r = run({"--help"}, {});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains(QLatin1String("--nproc")));
    QVERIFY(r.out.contains(QLatin1String("--accum-steps")));
    // What the monitor does with --run-dir (the worker's "empty: none" is not true here), and
    // where the comparing mode's flags are.
    QVERIFY2(r.out.contains(QLatin1String("a new one in the run history")), qPrintable(r.out));
    QVERIFY(r.out.contains(QLatin1String("--headless --compare --help")));
  }

  // Ctrl+C, and a closed terminal's SIGHUP (an ssh session that ended): a graceful stop, exit
  // 128 + the signal.
  void ctrlCStopsGracefullyAndExits130_data() {
    QTest::addColumn<int>("signo");
    QTest::newRow("SIGINT") << SIGINT;
    QTest::newRow("SIGHUP") << SIGHUP;
  }

  void ctrlCStopsGracefullyAndExits130() {
    QFETCH(int, signo);
    auto p = launch({"--nproc", "2"}, {{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QString err;
    const QList<qint64> pids = waitForStart(*p, &err);
    QCOMPARE(pids.size(), 2);
    QVERIFY(waitForTraining(2));  // the stop happens mid-training
    ::kill(pid_t(p->processId()), signo);
    QVERIFY(p->waitForFinished(kTimeout));
    QCOMPARE(p->exitStatus(), QProcess::NormalExit);
    QCOMPARE(p->exitCode(), 128 + signo);
    err += QString::fromUtf8(p->readAllStandardError());
    const QString out = QString::fromUtf8(p->readAllStandardOutput());
    QVERIFY2(err.contains(QLatin1String("stopping at the next step boundary")), qPrintable(err));
    QVERIFY2(out.contains(QLatin1String("stopped after")), qPrintable(out));
    QVERIFY(out.contains(QLatin1String("exited with code 0")));  // graceful, not killed
    QVERIFY(allGone(pids));
  }

  void oneCtrlCDeliveredTwiceIsOneRequest() {
    // GNU timeout passes a SIGINT on to its child and then to the child's process group: two
    // arrive within moments. That is one Ctrl+C (stop), not "Ctrl+C again" (kill); a press
    // that comes later is. Rank 1 ignores the stop, so only a kill ends this run (or the grace
    // period, 30 s after the first press); rank 0 stops gracefully.
    auto p = launch({"--nproc", "2"}, {{"FAKE_STEPS", "100000"},
                                       {"FAKE_STEP_MS", "5"},
                                       {"FAKE_HANG_RANK", "1"},
                                       {"FAKE_HANG_STEP", "100000"}});
    QString err;
    const QList<qint64> pids = waitForStart(*p, &err);
    QCOMPARE(pids.size(), 2);
    QVERIFY(waitForTraining(2));
    const pid_t monitor = pid_t(p->processId());
    // The second SIGINT as soon as the first has reached the monitor's handler: two deliveries
    // (sent together, the kernel would merge them into one pending signal), moments apart
    // however slow the test itself is.
    ::kill(monitor, SIGINT);
    QVERIFY(waitUntilDelivered(monitor, SIGINT));
    ::kill(monitor, SIGINT);
    QVERIFY(waitUntilDelivered(monitor, SIGINT));
    QVERIFY2(waitForStderr(*p,
                           QRegularExpression(QStringLiteral("stopping at the next step "
                                                             "boundary")),
                           &err, kTimeout)
                 .hasMatch(),
             qPrintable(err));
    // Rank 0 has stopped, gracefully unless the repeat killed it; rank 1 waits for a kill.
    QVERIFY(QTest::qWaitFor([&] { return pidGone(pids[0]); }, kTimeout));
    QTest::qSleep(600);  // the press comes well after the 500 ms in which a repeat is the same
    err += QString::fromUtf8(p->readAllStandardError());
    QVERIFY2(!err.contains(QLatin1String("killing the ranks")), qPrintable(err));
    QCOMPARE(p->state(), QProcess::Running);  // nothing ended the run yet
    ::kill(monitor, SIGINT);                  // a second press
    QVERIFY(p->waitForFinished(kTimeout));
    err += QString::fromUtf8(p->readAllStandardError());
    // One stop (the first two signals) and one kill (the press), which only rank 1 needed.
    QCOMPARE(err.count(QLatin1String("stopping at the next step boundary")), 1);
    QVERIFY2(err.count(QLatin1String("killing the ranks")) == 1, qPrintable(err));
    QVERIFY2(err.contains(QLatin1String("rank(s) 1 had to be killed")), qPrintable(err));
  }

  void ctrlCInATerminalReachesTheRanksOnce() {
    // A terminal sends SIGINT to the whole foreground process group. The ranks live in their
    // own group, so they get exactly one signal (the monitor's SIGTERM) and stop gracefully; a
    // second signal would make them exit at once without a checkpoint.
    auto p = std::make_unique<QProcess>();
    p->setChildProcessModifier([] { ::setpgid(0, 0); });  // ddpdesk leads a group, like a shell job
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert(QStringLiteral("XDG_DATA_HOME"), data->path());
    e.insert(QStringLiteral("DDPDESK_WORKER"), fakeWorker());
    e.insert(QStringLiteral("FAKE_STEPS"), QStringLiteral("100000"));
    e.insert(QStringLiteral("FAKE_STEP_MS"), QStringLiteral("5"));
    p->setProcessEnvironment(e);
    p->start(QStringLiteral(DDPDESK_BIN), {"--headless", "--nproc", "2"});
    QString err;
    const QList<qint64> pids = waitForStart(*p, &err);
    QCOMPARE(pids.size(), 2);
    QVERIFY(waitForTraining(2));
    ::kill(-pid_t(p->processId()), SIGINT);
    QVERIFY(p->waitForFinished(kTimeout));
    QCOMPARE(p->exitCode(), 130);
    const QString out = QString::fromUtf8(p->readAllStandardOutput());
    QCOMPARE(out.count(QLatin1String("exited with code 0")), 2);
    QVERIFY(allGone(pids));
  }

  void killedMonitorTakesItsRanksDown() {
    auto p = launch({"--nproc", "2"}, {{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QString err;
    const QList<qint64> pids = waitForStart(*p, &err);
    QCOMPARE(pids.size(), 2);
    QVERIFY(waitForTraining(2));
    ::kill(pid_t(p->processId()), SIGKILL);
    QVERIFY(p->waitForFinished(kTimeout));
    // PR_SET_PDEATHSIG: each rank gets SIGTERM and stops gracefully on its own.
    QTRY_VERIFY_WITH_TIMEOUT(notRunning(pids[0]) && notRunning(pids[1]), kTimeout);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestHeadless)
#include "test_headless.moc"

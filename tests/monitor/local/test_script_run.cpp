// Python-script runs end to end (task python): `ddpdesk --headless` starting real python3 ranks
// with torchrun's environment. A script that only prints its loss is charted from its output; a
// real two-rank PyTorch DDP script with accumulation (examples/ddp_train.py, Debian's
// python3-torch, Gloo) reports through the client, and the losses in the run's metrics equal
// those the script computed; Ctrl+C stops every rank through the client with a checkpoint and
// leaves no process; a sweep fills each run's placeholders; bad input is one line and exit 2
// with nothing written.
#include <QDirIterator>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <map>

#include "local/script_run_util.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {
constexpr int kTimeoutMs = 300000;  // python3 and torch start-up on a loaded 2-core machine
const QString kPython = QStringLiteral(DDPDESK_PYTHON3);
const QString kExamples = QStringLiteral(DDPDESK_SOURCE_DIR "/examples");

bool pythonHasTorch() {
  return ddpdesk::test::pythonHasTorch(kPython);
}
}  // namespace

class TestScriptRun : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> home;

  // examples/ddp_train.py on 2 ranks for 1,000 epochs (until stopped), its run directory in
  // *runDir; returned once both ranks have stepped (their client is in: a stop is graceful),
  // else null.
  std::unique_ptr<QProcess> startLongDdpRun(QString* runDir) {
    auto p = startHeadless(
        QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
        {"--task", "python", "--script", kExamples + "/ddp_train.py", "--python", kPython,
         "--nproc", "2", "--epochs", "1000", "--script-args",
         "--epochs {epochs} --samples 512 --step-sleep 0.05 --losses {run_dir}/losses"});
    for (int i = 0; i < kTimeoutMs / 100 && runDir->isEmpty(); ++i) {
      QTest::qWait(100);
      *runDir = onlyRunDir(home->path());
    }
    const QString metrics = *runDir + QStringLiteral("/metrics.jsonl");
    for (int i = 0; i < kTimeoutMs / 100 && !bothRanksStepping(metrics); ++i) QTest::qWait(100);
    if (runDir->isEmpty() || !bothRanksStepping(metrics)) return nullptr;
    return p;
  }

 private Q_SLOTS:
  void init() {
    home = std::make_unique<QTemporaryDir>();
    QVERIFY(home->isValid());
  }

  // No client: "step N loss=X" lines on each rank's stdout become its loss curve.
  void printedLossesAreCharted() {
    auto p =
        startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
                      {"--task", "python", "--script", kExamples + "/print_only.py", "--python",
                       kPython, "--nproc", "2", "--script-args", "--steps 12 --sleep 0"});
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(!r.err.contains(QStringLiteral("still run")), qPrintable(r.err));
    const QString runDir = onlyRunDir(home->path());
    QVERIFY(!runDir.isEmpty());
    const auto losses = stepLosses(runDir);
    QCOMPARE(int(losses.size()), 2);
    for (int rank = 0; rank < 2; ++rank) {
      QCOMPARE(int(losses.at(rank).size()), 12);
      for (const auto& [step, loss] : losses.at(rank)) {
        const double printed =
            QString::number(2.0 * std::exp(-double(step) / 20) + 0.01 * rank, 'f', 6).toDouble();
        QCOMPARE(loss, printed);
      }
    }
    // The run's curve is the ranks' mean at every step (each rank printed its own loss).
    MetricsStore store;
    QVERIFY(store.loadJsonl(runDir + QStringLiteral("/metrics.jsonl")).ok);
    const GlobalSeries& global = store.global();
    QCOMPARE(int(global.size()), 12);
    for (std::size_t i = 0; i < global.size(); ++i) {
      const qint64 step = qint64(global.step[i]);
      QCOMPARE(step, qint64(i) + 1);
      const double mean = (losses.at(0).at(step) + losses.at(1).at(step)) / 2;
      QCOMPARE(global.loss[i], mean);
      QVERIFY(global.loss[i] != losses.at(0).at(step));
    }
    // The ranks' own output is kept as for any rank.
    QFile log(runDir + QStringLiteral("/rank-1.log"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    QVERIFY(log.readAll().contains("epoch 0 step 12 loss="));
  }

  // `--attach` of a running script run without the client: its printed losses are read from
  // the ranks' rank-N.log as the running monitor reads them from their output, its ranks'
  // system metrics from what that monitor sampled (metrics/system.jsonl: the follower has no
  // pid to sample), and the run ends with what that monitor recorded (no rank file could say so).
  void anAttachFollowsAScriptRunWithoutTheClient() {
    auto p =
        startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
                      {"--task", "python", "--script", kExamples + "/print_only.py", "--python",
                       kPython, "--nproc", "2", "--script-args", "--steps 30 --sleep 0.1"});
    QString runDir;
    for (int i = 0; i < kTimeoutMs / 100 && runDir.isEmpty(); ++i) {
      QTest::qWait(100);
      runDir = onlyRunDir(home->path());
    }
    QVERIFY(!runDir.isEmpty());
    // Followed once its ranks started (the directory is there before its spec.json).
    const QString log0 = runDir + QStringLiteral("/rank-0.log");
    for (int i = 0; i < kTimeoutMs / 100 && !QFileInfo::exists(log0); ++i) QTest::qWait(100);
    auto attach = startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
                                {"--attach", runDir});
    const ProcessResult ran = finishProcess(*p, kTimeoutMs);
    QVERIFY2(ran.code == 0, qPrintable(ran.err));
    const ProcessResult followed = finishProcess(*attach, kTimeoutMs);
    QVERIFY2(followed.code == 0, qPrintable(followed.err));
    // The follower charted all 30 printed steps and ended with the run.
    QVERIFY2(ran.out.contains(QStringLiteral("finished after")), qPrintable(ran.out));
    QVERIFY2(followed.out.contains(QStringLiteral(": 30 steps,")), qPrintable(followed.out));
    QVERIFY2(followed.out.contains(QStringLiteral("finished after")), qPrintable(followed.out));
    // Each rank's system use in the follower's summary, as in the launching monitor's.
    for (const ProcessResult* r : {&ran, &followed}) {
      const qsizetype table = r->out.indexOf(QStringLiteral("system use per rank:"));
      QVERIFY2(table >= 0, qPrintable(r->out));
      for (int rank = 0; rank < 2; ++rank)
        QVERIFY2(r->out.mid(table).contains(
                     QRegularExpression(QStringLiteral("\\n%1\\s+[0-9.]+ [KMG]iB").arg(rank))),
                 qPrintable(r->out));
    }
  }

  // A real DDP script with the client: the losses in the run's metrics are the script's own.
  void ddpScriptLossesAreTheScripts() {
    if (!pythonHasTorch()) QSKIP("python3-torch is not installed for " DDPDESK_PYTHON3);
    const QString losses = home->filePath(QStringLiteral("losses"));
    auto p = startHeadless(
        QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
        {"--task", "python", "--script", kExamples + "/ddp_train.py", "--python", kPython,
         "--nproc", "2", "--batch-size", "8", "--accum-steps", "2", "--epochs", "1", "--seed", "3",
         "--script-args",
         "--epochs {epochs} --batch-size {batch_size} --accum-steps {accum_steps} --lr {lr} "
         "--seed {seed} --samples 512 --losses " +
             losses});
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString runDir = onlyRunDir(home->path());
    const auto charted = stepLosses(runDir);
    for (int rank = 0; rank < 2; ++rank) {
      QFile f(losses + QStringLiteral(".rank-%1").arg(rank));
      QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(f.fileName()));
      int lines = 0;
      for (const QByteArray& line : f.readAll().split('\n')) {
        const QList<QByteArray> parts = line.split(' ');
        if (parts.size() != 2) continue;
        ++lines;
        const qint64 step = parts[0].toLongLong();
        QVERIFY2(charted.count(rank) && charted.at(rank).count(step),
                 qPrintable(QStringLiteral("rank %1 step %2 not charted").arg(rank).arg(step)));
        QCOMPARE(charted.at(rank).at(step), parts[1].toDouble());  // bit for bit
      }
      QCOMPARE(lines, 512 / (8 * 2 * 2));  // every optimizer step of the epoch
    }
    QVERIFY(QFileInfo::exists(runDir + QStringLiteral("/checkpoint.pt")));

    // The script's phases (ddpdesk.phase) give each rank a step breakdown, comm measured, whose
    // parts fit in the step; the headless summary prints it.
    MetricsStore store;
    QVERIFY(store.loadJsonl(runDir + QStringLiteral("/metrics.jsonl")).ok);
    for (int rank = 0; rank < 2; ++rank) {
      const auto t = store.breakdown(rank).average();
      QVERIFY2(t, qPrintable(QStringLiteral("rank %1 has no breakdown").arg(rank)));
      QVERIFY(t->comm_measured);
      QVERIFY(t->forward > 0 && t->backward > 0 && t->optimizer > 0 && t->data > 0);
      QVERIFY(t->data + t->forward + t->backward + t->comm + t->optimizer + t->other <=
              t->step * 1.0001);
    }
    QVERIFY2(r.out.contains("sync eff."), qPrintable(r.out));
  }

  // Ctrl+C: the client's should_stop() on every rank, the script's checkpoint, exit 130 (stopped),
  // and no process of the run left.
  void ctrlCStopsEveryRankWithACheckpoint() {
    if (!pythonHasTorch()) QSKIP("python3-torch is not installed for " DDPDESK_PYTHON3);
    QString runDir;
    auto p = startLongDdpRun(&runDir);
    QVERIFY2(p != nullptr, "the ranks never stepped");
    ::kill(pid_t(p->processId()), SIGINT);
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QVERIFY2(r.code == 130, qPrintable(r.err));
    // Every rank spoke to the client: they agree on a step boundary.
    QVERIFY2(r.err.contains(QLatin1String("stopping at the next step boundary")),
             qPrintable(r.err));
    QVERIFY(QFileInfo::exists(runDir + QStringLiteral("/checkpoint.pt")));
    QFile status(runDir + QStringLiteral("/status.json"));
    QVERIFY(status.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(status.readAll()).object().value("state").toString(),
             QStringLiteral("Stopped"));
    // No python3 of this run is left (their command lines name the run directory).
    const ProcessResult ps = runProgram(QStringLiteral("pgrep"), {"-f", runDir});
    QVERIFY2(ps.out.trimmed().isEmpty(), qPrintable(ps.out));

    // Resume: the script is started again with DDPDESK_RESUME and {resume}; the example reloads
    // its checkpoint and continues after the step it stopped at, to the end of epoch 2.
    const auto before = stepLosses(runDir);
    QVERIFY(before.count(0));
    const qint64 stoppedAt = before.at(0).rbegin()->first;
    QVERIFY(stoppedAt < 32);
    auto again = startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
                               {"--resume", runDir, "--epochs", "2"});
    const ProcessResult r2 = finishProcess(*again, kTimeoutMs);
    QVERIFY2(r2.code == 0, qPrintable(r2.err));
    QFile written(runDir + QStringLiteral("/losses.rank-1"));
    QVERIFY(written.open(QIODevice::ReadOnly));
    QList<qint64> steps;
    for (const QByteArray& line : written.readAll().split('\n'))
      if (!line.isEmpty()) steps << line.split(' ').front().toLongLong();
    // Steps 1..32 once each: the resumed script began right after its checkpoint's step.
    QCOMPARE(steps.size(), 32);
    for (int i = 0; i < steps.size(); ++i) QCOMPARE(steps[i], qint64(i + 1));
    QCOMPARE(stepLosses(runDir).at(1).size(), std::size_t(32));
  }

  // A script that never uses the client: headless names the interpreter and the script it
  // started (not the worker), and Ctrl+C says what it does to them: SIGTERM, no step boundary.
  void aScriptWithoutTheClientIsNamedAndToldSigterm() {
    const QString script = home->filePath(QStringLiteral("sleepy.py"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import time\nprint('step 1 loss=1.0', flush=True)\ntime.sleep(600)\n");
    f.close();
    auto p = startHeadless(
        QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
        {"--task", "python", "--script", script, "--python", kPython, "--nproc", "2"});
    QString err;
    QVERIFY2(
        waitForStderr(*p, QRegularExpression(QStringLiteral("pids [0-9 ]+\n")), &err, kTimeoutMs)
            .hasMatch(),
        qPrintable(err));
    QVERIFY2(err.contains(QStringLiteral("started 2 rank(s) of %1 %2, pids ").arg(kPython, script)),
             qPrintable(err));
    ::kill(pid_t(p->processId()), SIGINT);
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    err += r.err;
    QVERIFY2(err.contains(QLatin1String(
                 "ddpdesk: asking the ranks to stop (SIGTERM; Ctrl+C again to kill them)")),
             qPrintable(err));
    QVERIFY2(!err.contains(QLatin1String("step boundary")), qPrintable(err));
  }

  // A rank killed from outside (the OOM killer): the run fails naming it, the other rank is
  // stopped, nothing is left running.
  void aKilledRankFailsTheRunAndLeavesNothing() {
    if (!pythonHasTorch()) QSKIP("python3-torch is not installed for " DDPDESK_PYTHON3);
    QString runDir;
    auto p = startLongDdpRun(&runDir);
    QVERIFY2(p != nullptr, "the ranks never stepped");
    const ProcessResult pg =
        runProgram(QStringLiteral("pgrep"), {"-f", runDir + QStringLiteral("/losses")});
    QList<qint64> pids = pidList(pg.out.simplified());
    QCOMPARE(pids.size(), 2);
    // Which of the two is rank 1: its environment says.
    qint64 rank1 = 0;
    for (qint64 pid : pids) {
      QFile env(QStringLiteral("/proc/%1/environ").arg(pid));
      if (env.open(QIODevice::ReadOnly) && env.readAll().split('\0').contains("RANK=1"))
        rank1 = pid;
    }
    QVERIFY(rank1 != 0);
    ::kill(pid_t(rank1), SIGKILL);
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(QStringLiteral("rank 1 was killed by signal 9 (SIGKILL)")),
             qPrintable(r.err));
    QVERIFY(allGone(pids));
  }

  // max_restarts: a script rank that dies after printing losses restarts the run, and the new
  // attempt is told as torchrun tells it (the restart count, the most restarts, the run
  // directory to resume from); the run then finishes with exit 0.
  void aScriptRankThatDiesRestartsTheRunAsTorchrunWould() {
    const QString script =
        QStringLiteral(DDPDESK_SOURCE_DIR "/tests/monitor/local/py/restart_once.py");
    auto p = startHeadless(
        QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
        {"--task", "python", "--script", script, "--python", kPython, "--nproc", "2",
         "--max-restarts", "1", "--restart-backoff", "0", "--script-args", "{run_dir}"});
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("restart 1 of 1 in 0 s after step")), qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("rank 1 exited with code 5")), qPrintable(r.err));
    const QString runDir = onlyRunDir(home->path());
    QVERIFY(!runDir.isEmpty());
    for (int rank = 0; rank < 2; ++rank) {
      QFile first(runDir + QStringLiteral("/attempt-0-rank-%1.txt").arg(rank));
      QVERIFY(first.open(QIODevice::ReadOnly));
      QCOMPARE(first.readAll(),
               QByteArray("TORCHELASTIC_RESTART_COUNT=0\nTORCHELASTIC_MAX_RESTARTS="
                          "1\nDDPDESK_RESUME=\n"));
      QFile second(runDir + QStringLiteral("/attempt-1-rank-%1.txt").arg(rank));
      QVERIFY(second.open(QIODevice::ReadOnly));
      QCOMPARE(QString::fromUtf8(second.readAll()),
               QStringLiteral("TORCHELASTIC_RESTART_COUNT=1\nTORCHELASTIC_MAX_RESTARTS=1\n"
                              "DDPDESK_RESUME=%1\n")
                   .arg(runDir));
    }
    QFile status(runDir + QStringLiteral("/status.json"));
    QVERIFY(status.open(QIODevice::ReadOnly));
    const QJsonObject s = QJsonDocument::fromJson(status.readAll()).object();
    QCOMPARE(s.value(QStringLiteral("state")).toString(), QStringLiteral("Finished"));
    QCOMPARE(s.value(QStringLiteral("restarts")).toInt(), 1);
  }

  // Rank 0 ends well while rank 1 would wait for it forever: said at once, and a collective
  // timeout later rank 1 is stopped and the run fails naming the wait.
  void aRankLeftWaitingIsStoppedAfterTheCollectiveTimeout() {
    const QString script = writeFile(
        QDir(home->path()), QStringLiteral("lone.py"),
        "import os, time\nif os.environ['RANK'] != '0':\n    time.sleep(600)\nprint('loss=1')\n");
    auto p = startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
                           {"--task", "python", "--script", script, "--python", kPython, "--nproc",
                            "2", "--collective-timeout", "2"});
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(QStringLiteral("rank 0 ended while rank(s) 1 still run")),
             qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("rank(s) 1 still ran 2 s after rank 0 ended")),
             qPrintable(r.err));
    const ProcessResult ps = runProgram(QStringLiteral("pgrep"), {"-f", script});
    QVERIFY2(ps.out.trimmed().isEmpty(), qPrintable(ps.out));
  }

  // A sweep of script runs: each grid point's values fill the placeholders of its own run.
  void aSweepFillsEachRunsPlaceholders() {
    const QDir home_(home->path());
    const QString script = writeFile(home_, QStringLiteral("echo_lr.py"),
                                     "import sys\nprint('step 1 loss=' + sys.argv[1])\n");
    const QJsonObject base{{"task", "python"},
                           {"script", script},
                           {"python", kPython},
                           {"nproc", 1},
                           {"script_args", "{lr}"}};
    const QJsonObject sweep{
        {"name", "lrs"}, {"base", base}, {"grid", QJsonObject{{"lr", QJsonArray{0.5, 0.25}}}}};
    const QString file =
        writeFile(home_, QStringLiteral("sweep.json"), QJsonDocument(sweep).toJson());
    auto p =
        startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(), {"--sweep", file});
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QDir sweeps(home->path() + QStringLiteral("/ddpdesk/sweeps"));
    const QStringList dirs = sweeps.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(dirs.size(), 1);
    QFile index(sweeps.filePath(dirs.front()) + QStringLiteral("/index.json"));
    QVERIFY(index.open(QIODevice::ReadOnly));
    const QJsonArray runs = QJsonDocument::fromJson(index.readAll()).object()["runs"].toArray();
    QCOMPARE(runs.size(), 2);
    for (const QJsonValue& run : runs) {
      const double lr = run["fields"]["lr"].toDouble();
      const auto losses = stepLosses(run["run_dir"].toString());
      QVERIFY2(losses.count(0) && losses.at(0).count(1), qPrintable(run["run_dir"].toString()));
      QCOMPARE(losses.at(0).at(1), lr);  // the script printed the {lr} it was given
    }
  }

  // A script that cannot even be compiled: the run fails at once with Python's own words.
  void aSyntaxErrorFailsAtOnceWithTheTraceback() {
    const QString script = writeFile(QDir(home->path()), QStringLiteral("broken.py"),
                                     "import os\ndef train(:\n    pass\n");
    auto p = startHeadless(
        QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
        {"--task", "python", "--script", script, "--python", kPython, "--nproc", "2"});
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(QStringLiteral("SyntaxError")), qPrintable(r.err));
  }

  void badInputIsOneLineAndNothingWritten_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("line");
    const QString script = kExamples + QStringLiteral("/print_only.py");
    QTest::newRow("no script") << QStringList{"--task", "python"}
                               << "ddpdesk: invalid --script '': is required with task python: "
                                  "the training script to run";
    QTest::newRow("missing script")
        << QStringList{"--task", "python", "--script", "/nonexistent/train.py"}
        << "ddpdesk: invalid --script '/nonexistent/train.py': no such file";
    QTest::newRow("unknown placeholder")
        << QStringList{"--task", "python", "--script", script, "--script-args", "--x {bogus}"}
        << "ddpdesk: invalid --script-args '--x {bogus}': has the unknown placeholder {bogus} "
           "(known: {batch_size} {accum_steps} {epochs} {lr} {seed} {precision} {nproc} {run_dir} "
           "{resume})";
    QTest::newRow("python not executable")
        << QStringList{"--task", "python", "--script", script, "--python", script}
        << "ddpdesk: invalid --python '" + script + "': is not an executable file";
    QTest::newRow("loss pattern without its group")
        << QStringList{"--task", "python", "--script", script, "--loss-pattern", "loss ([0-9.]+)"}
        << "ddpdesk: invalid --loss-pattern 'loss ([0-9.]+)': has no group named loss, e.g. "
           "loss=(?<loss>[0-9.eE+-]+)";
    // Not compiling comes first: the group a broken expression lacks is no news.
    QTest::newRow("loss pattern without its group that does not compile")
        << QStringList{"--task", "python", "--script", script, "--loss-pattern", "loss=(\\d+"}
        << "ddpdesk: invalid --loss-pattern 'loss=(\\d+': is no regular expression: missing "
           "closing parenthesis at offset 9";
    QTest::newRow("loss pattern that does not compile")
        << QStringList{"--task", "python", "--script", script, "--loss-pattern", "(?<loss>[0-9"}
        << "ddpdesk: invalid --loss-pattern '(?<loss>[0-9': is no regular expression: missing "
           "terminating ] for character class at offset 12";
    QTest::newRow("logdir that is a file")
        << QStringList{"--task", "python", "--script", script, "--logdir", script}
        << "ddpdesk: invalid --logdir '" + script + "': is not a directory";
    QTest::newRow("unclosed quote")
        << QStringList{"--task", "python", "--script", script, "--script-args", "--name 'x"}
        << "ddpdesk: invalid --script-args '--name 'x': an unclosed ' quote";
  }
  void badInputIsOneLineAndNothingWritten() {
    QFETCH(QStringList, args);
    QFETCH(QString, line);
    auto p = startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(), args);
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.trimmed(), line);
    QVERIFY(!QDir(home->path() + QStringLiteral("/ddpdesk")).exists());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestScriptRun)
#include "test_script_run.moc"

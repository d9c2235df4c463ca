// Python-script runs the monitor measures itself, through `ddpdesk --headless` with real python3
// ranks: a script that only writes TensorBoard event files (as SummaryWriter writes them, one
// record left half-written for seconds) is charted from them live, exactly, per rank, with its
// evaluations and extra scalars, while an earlier run's event file in the same folder is left
// alone; every rank's system metrics are sampled by pid; a rank's DataLoader worker processes
// never outlive the run, whether a rank is killed or the run is stopped; a SIGTERM from outside
// is a stop, not a failure.
#include <QDateTime>
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <set>

#include "event.h"
#include "local/script_run_util.h"
#include "qt_test_main.h"
#include "system_gauges.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {
constexpr int kTimeoutMs = 300000;  // python3 and torch start-up on a loaded 2-core machine
const QString kPython = QStringLiteral(DDPDESK_PYTHON3);
const QString kScripts = QStringLiteral(DDPDESK_SOURCE_DIR "/tests/monitor/local/py");
const QString kTbEvents = QStringLiteral(DDPDESK_SOURCE_DIR "/tests/tensorboard/py");

// The pids listed one per line in a file (empty while it does not exist).
QList<qint64> pidsIn(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return pidList(QString::fromUtf8(f.readAll()).simplified());
}

// Waits up to 2 s for every pid to be gone: a SIGKILLed process takes a moment to be reaped.
bool goneSoon(const QList<qint64>& pids) {
  for (int i = 0; i < 20; ++i) {
    bool all = true;
    for (qint64 pid : pids) all = all && notRunning(pid);
    if (all) return true;
    QTest::qWait(100);
  }
  return false;
}

}  // namespace

class TestScriptRunMeasured : public QObject {
  Q_OBJECT
  std::unique_ptr<QTemporaryDir> home;

  // loader_workers.py on 2 ranks in a folder of its own, returned once both ranks and their four
  // loader workers have written their pids, all six in *pids (else null).
  std::unique_ptr<QProcess> startLoaderRun(QList<qint64>* pids) {
    const QDir dir(home->filePath(QStringLiteral("work")));
    if (!QDir().mkpath(dir.path())) return nullptr;
    auto p = startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
                           {"--task", "python", "--script", kScripts + "/loader_workers.py",
                            "--python", kPython, "--nproc", "2", "--workdir", dir.path()});
    auto every = [&] {
      QList<qint64> all;
      for (const char* f : {"pids.rank-0", "pids.rank-1", "workers.rank-0", "workers.rank-1"})
        all += pidsIn(dir.filePath(QString::fromLatin1(f)));
      return all;
    };
    for (int i = 0;
         i < kTimeoutMs / 100 && every().size() < 6 && p->state() != QProcess::NotRunning; ++i)
      QTest::qWait(100);
    *pids = every();
    return pids->size() == 6 ? std::move(p) : nullptr;
  }

 private Q_SLOTS:
  void init() {
    home = std::make_unique<QTemporaryDir>();
    QVERIFY(home->isValid());
  }

  void eventFilesAndSystemMetricsAreCharted() {
    // The working directory already holds an earlier run's event file: not this run's.
    const QDir work(home->filePath(QStringLiteral("work")));
    QVERIFY(QDir().mkpath(work.filePath(QStringLiteral("runs/earlier"))));
    const QString earlier = work.filePath(QStringLiteral("runs/earlier/events.out.tfevents.1.h"));
    {
      std::string bytes;
      tb::append_scalar_record(bytes, 1.6e9, 1, "train/loss", 123.0f);
      QFile f(earlier);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(bytes.data(), qint64(bytes.size()));
      QVERIFY(f.flush());  // written now: the time set below is the last word
      QVERIFY(f.setFileTime(QDateTime::currentDateTime().addSecs(-3600),
                            QFileDevice::FileModificationTime));
    }
    constexpr int kSteps = 6;
    auto p = startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
                           {"--task", "python", "--script", kScripts + "/tb_script.py", "--python",
                            kPython, "--nproc", "2", "--workdir", work.path(), "--script-args",
                            kTbEvents + QStringLiteral(" %1 0.2").arg(kSteps)});
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString runDir = onlyRunDir(home->path());
    QVERIFY(!runDir.isEmpty());

    // Every step's loss as the script logged it (float32), for each rank, once; no 123 from the
    // earlier run's file.
    const auto charted = stepLosses(runDir);
    const QList<QJsonObject> steps = runMessages(runDir, QStringLiteral("step"));
    QCOMPARE(steps.size(), 2 * kSteps);
    for (int rank = 0; rank < 2; ++rank) {
      QFile f(work.filePath(QStringLiteral("expected.rank-%1").arg(rank)));
      QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(f.fileName()));
      int lines = 0;
      for (const QByteArray& line : f.readAll().split('\n')) {
        const QList<QByteArray> parts = line.split(' ');
        if (parts.size() != 3) continue;
        ++lines;
        const qint64 step = parts[0].toLongLong();
        QVERIFY2(charted.count(rank) && charted.at(rank).count(step),
                 qPrintable(QStringLiteral("rank %1 step %2 not charted").arg(rank).arg(step)));
        QCOMPARE(charted.at(rank).at(step), parts[1].toDouble());
      }
      QCOMPARE(lines, kSteps);
    }
    // Evaluations (every third step, both ranks) and the learning rate, a scalar per rank.
    QCOMPARE(runMessages(runDir, QStringLiteral("eval")).size(), 2 * (kSteps / 3));
    std::set<std::pair<int, qint64>> lrPoints;
    std::map<int, std::set<QString>> systemGauges;
    for (const QJsonObject& g : runMessages(runDir, QStringLiteral("gauge"))) {
      const int rank = g.value(QStringLiteral("rank")).toInt();
      const QString name = g.value(QStringLiteral("name")).toString();
      if (name == QLatin1String("train/lr"))
        lrPoints.insert({rank, qint64(g.value(QStringLiteral("step")).toDouble())});
      else
        systemGauges[rank].insert(name);
    }
    QCOMPARE(int(lrPoints.size()), 2 * kSteps);
    // The script runs for seconds (its half-written record alone waits 2.5 s): sampled by pid.
    for (int rank = 0; rank < 2; ++rank) {
      QVERIFY2(systemGauges[rank].count(QString::fromLatin1(gauges::kRssBytes)),
               qPrintable(QStringLiteral("rank %1 has no memory readings").arg(rank)));
      QVERIFY(systemGauges[rank].count(QString::fromLatin1(gauges::kThreads)));
    }
  }

  // A rank killed from outside: the run fails naming it, and neither rank nor any of the four
  // DataLoader workers is left.
  void loaderWorkersEndWithAKilledRank() {
    if (!pythonHasTorch(kPython)) QSKIP("python3-torch is not installed for " DDPDESK_PYTHON3);
    QList<qint64> pids;
    auto p = startLoaderRun(&pids);
    QVERIFY2(p != nullptr, "the ranks and their loader workers never started");
    ::kill(pid_t(pids[1]), SIGKILL);  // rank 1
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(QStringLiteral("rank 1 was killed by signal 9 (SIGKILL)")),
             qPrintable(r.err));
    QVERIFY2(goneSoon(pids), "a rank or loader worker outlived the run");
  }

  // Ctrl+C: a script without the client dies of the SIGTERM; its loader workers go with it.
  void loaderWorkersEndWithAStoppedRun() {
    if (!pythonHasTorch(kPython)) QSKIP("python3-torch is not installed for " DDPDESK_PYTHON3);
    QList<qint64> pids;
    auto p = startLoaderRun(&pids);
    QVERIFY2(p != nullptr, "the ranks and their loader workers never started");
    ::kill(pid_t(p->processId()), SIGINT);
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QVERIFY2(r.code == 130, qPrintable(r.err));
    QVERIFY2(goneSoon(pids), "a rank or loader worker outlived the run");
  }

  // SIGTERM from outside to one rank of a script without the client (a user's `kill`): Python
  // dies of it; that is a stop, not a failure. The other rank is stopped too, nothing is left.
  void aStopSignalFromOutsideStopsTheRun() {
    const QString work = home->filePath(QStringLiteral("work"));
    QVERIFY(QDir().mkpath(work));
    const QString script = writeFile(QDir(work), QStringLiteral("sleeper.py"),
                                     "import os, time\n"
                                     "open('pids.rank-' + os.environ['RANK'], 'w').write("
                                     "str(os.getpid()))\n"
                                     "for step in range(1, 100000):\n"
                                     "    print('step %d loss=%f' % (step, 1.0 / step), "
                                     "flush=True)\n"
                                     "    time.sleep(0.05)\n");
    auto p = startHeadless(QStringLiteral(DDPDESK_BIN), workerBeside(), home->path(),
                           {"--task", "python", "--script", script, "--python", kPython, "--nproc",
                            "2", "--workdir", work});
    QList<qint64> pids;
    for (int i = 0; i < kTimeoutMs / 100 && pids.size() < 2; ++i) {
      QTest::qWait(100);
      pids = pidsIn(work + QStringLiteral("/pids.rank-0")) +
             pidsIn(work + QStringLiteral("/pids.rank-1"));
    }
    QCOMPARE(pids.size(), 2);
    ::kill(pid_t(pids[1]), SIGTERM);
    const ProcessResult r = finishProcess(*p, kTimeoutMs);
    QVERIFY2(r.code == 130, qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("signalled from outside the monitor")),
             qPrintable(r.err));
    QVERIFY2(goneSoon(pids), "a rank outlived the run");
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestScriptRunMeasured)
#include "test_script_run_measured.moc"

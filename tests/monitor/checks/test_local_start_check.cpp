// localStartProblem: what a spec asks of this machine that the monitor refuses before anything
// is spawned or written (the ranks' DDPDESK_* environment by the worker's own rules, a run
// directory holding another run, a Fashion-MNIST task's missing files, a metrics file with
// nowhere to go), and what it lets through.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "checks/local_start_check.h"
#include "qt_test_main.h"
#include "run/run_directory.h"

using namespace ddpdesk;

class TestLocalStartCheck : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;
  QProcessEnvironment clean;

 private Q_SLOTS:
  void initTestCase() { QVERIFY(tmp.isValid()); }

  void aPlainSpecPasses() { QCOMPARE(localStartProblem(RunSpec{}, clean), QString()); }

  void theRanksEnvironmentIsCheckedByTheWorkersRules() {
    QProcessEnvironment env;
    env.insert(QStringLiteral("DDPDESK_COMM"), QStringLiteral("foo"));
    QCOMPARE(
        localStartProblem(RunSpec{}, env),
        QStringLiteral("invalid environment DDPDESK_COMM='foo': must be one of auto, shm, gloo"));
    env.insert(QStringLiteral("DDPDESK_COMM"), QStringLiteral("gloo"));
    QCOMPARE(localStartProblem(RunSpec{}, env), QString());
  }

  void aDirectoryHoldingAnotherRunIsRefusedUnlessResumed() {
    const QString dir = tmp.filePath(QStringLiteral("held"));
    QVERIFY(QDir().mkpath(dir));
    RunSpec s;
    s.run_dir = dir.toStdString();
    QCOMPARE(localStartProblem(s, clean), QString());  // empty: a new run may go there
    QFile spec(RunDirectory::specPath(dir));
    QVERIFY(spec.open(QIODevice::WriteOnly));
    spec.write("{}\n");
    spec.close();
    const QString said = localStartProblem(s, clean);
    QVERIFY2(
        said.startsWith(QStringLiteral("invalid --run-dir '%1': it holds another run").arg(dir)),
        qPrintable(said));
    // Continuing that run in place, from the directory or from one of its checkpoints.
    s.resume = dir.toStdString();
    QCOMPARE(localStartProblem(s, clean), QString());
    s.resume = (dir + QStringLiteral("/checkpoints/step-00000004.pt")).toStdString();
    QCOMPARE(localStartProblem(s, clean), QString());
    // Resuming another run into it is not continuing it ("held" is no parent of "held-2").
    s.resume = (dir + QStringLiteral("-2")).toStdString();
    QVERIFY(!localStartProblem(s, clean).isEmpty());
  }

  // A resume keeps the run's plan; the epochs, the learning rate and the like may change.
  void aResumeKeepsTheRunsWorldBatchAccumulationAndData() {
    const QString dir = tmp.filePath(QStringLiteral("planned"));
    QVERIFY(QDir().mkpath(dir + QStringLiteral("/checkpoints")));
    RunSpec was;
    was.nproc = 2;
    was.batch_size = 4;
    was.accum_steps = 2;
    was.run_dir = dir.toStdString();
    QFile spec(RunDirectory::specPath(dir));
    QVERIFY(spec.open(QIODevice::WriteOnly));
    spec.write(QByteArray::fromStdString(to_json_text(was)));
    spec.close();
    RunSpec s = was;
    s.resume = dir.toStdString();
    s.epochs = 5;
    s.lr = 0.01;
    QCOMPARE(localStartProblem(s, clean), QString());
    s.nproc = 1;
    QCOMPARE(localStartProblem(s, clean),
             QStringLiteral("invalid --nproc '1': the resumed run trains with 2 (where it stands "
                            "depends on it); start a new run to change it"));
    s.nproc = 2;
    s.resume = (dir + QStringLiteral("/checkpoints/step-00000010.pt")).toStdString();
    s.batch_size = 8;
    QVERIFY(localStartProblem(s, clean).startsWith(QLatin1String("invalid --batch-size '8'")));
    s.batch_size = 4;
    s.dataset_size = 100;  // the task's default before
    QVERIFY(localStartProblem(s, clean).startsWith(QLatin1String("invalid --dataset-size '100'")));
  }

  // A Fashion-MNIST task's files where the ranks would read them: DDPDESK_FMNIST_DIR or the
  // system's (fmnist_files.h). A Slurm job's nodes have their own.
  void aFashionMnistTaskNeedsItsFiles() {
    RunSpec s;
    s.task = "fmnist-cnn";
    QProcessEnvironment env;
    env.insert(QStringLiteral("DDPDESK_FMNIST_DIR"), tmp.filePath(QStringLiteral("none")));
    QCOMPARE(localStartProblem(s, env),
             QStringLiteral("Fashion-MNIST file not found: %1/train-images-idx3-ubyte.gz "
                            "(install dataset-fashion-mnist, or set DDPDESK_FMNIST_DIR)")
                 .arg(tmp.filePath(QStringLiteral("none"))));
    s.task = "seed";
    QCOMPARE(localStartProblem(s, env), QString());
    s.task = "fmnist-mlp";
    s.launcher = "slurm";
    s.slurm_partition = "p";
    QVERIFY(!localStartProblem(s, env).startsWith(QLatin1String("Fashion-MNIST")));
  }

  void aMetricsFileNeedsItsDirectory() {
    RunSpec s;
    s.metrics_file = tmp.filePath(QStringLiteral("missing/m.jsonl")).toStdString();
    const QString said = localStartProblem(s, clean);
    QVERIFY2(said.startsWith(QLatin1String("invalid --metrics-file")) &&
                 said.contains(QLatin1String("does not exist")),
             qPrintable(said));
    s.metrics_file = tmp.filePath(QStringLiteral("m-{rank}.jsonl")).toStdString();
    QCOMPARE(localStartProblem(s, clean), QString());
  }
};

DDPDESK_TEST_MAIN(TestLocalStartCheck)
#include "test_local_start_check.moc"

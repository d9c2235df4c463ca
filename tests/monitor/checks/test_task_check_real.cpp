// The task check against the real ddpdesk-worker: its `--check` line is read as the form and
// headless read it, and `ddpdesk --headless` refuses a user task whose model the worker rejects
// (exit 2, the worker's words, nothing spawned or written). A user task made by
// examples/make_user_task.py (synthetic data, small model) is checked when /usr/bin/python3 has
// torch, and one whose samples are too narrow for its model (the interpreter's reason kept in the
// one line); otherwise those cases are skipped.
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "checks/task_check.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {
constexpr int kTimeout = 120000;
const QString kWorker = QStringLiteral(DDPDESK_REAL_WORKER);
}  // namespace

class TestTaskCheckReal : public QObject {
  Q_OBJECT

  QTemporaryDir tmp;

  QString file(const QString& name, const QByteArray& content) {
    QFile f(tmp.filePath(name));
    f.open(QIODevice::WriteOnly);
    f.write(content);
    return f.fileName();
  }

 private Q_SLOTS:
  void builtInTaskAnswers() {
    RunSpec s;  // the seed task: 900 generated samples
    const TaskCheckResult r = runTaskCheckNow(kWorker, s, kTimeout);
    QVERIFY2(r.ok(), qPrintable(r.error));
    QCOMPARE(r.task, QStringLiteral("seed"));
    QCOMPARE(r.trainSamples, 900);
    QVERIFY(r.parameters > 0);
  }

  void notATorchScriptFileIsBadInputOnTheModel() {
    RunSpec s;
    s.task = "script";
    s.model = file("x.pt", "not a model\n").toStdString();
    s.train_data = file("train.safetensors", "not tensors\n").toStdString();
    const TaskCheckResult r = runTaskCheckNow(kWorker, s, kTimeout);
    QCOMPARE(r.status, TaskCheckResult::Status::BadInput);
    QCOMPARE(r.field, QStringLiteral("model"));
    QVERIFY2(r.error.startsWith(QStringLiteral("invalid --model '%1': ").arg(s.model.c_str())),
             qPrintable(r.error));
    QVERIFY2(r.fieldMessage().contains(QLatin1String("TorchScript")), qPrintable(r.error));
    // The reason comes as its own part of the answer, the line is built from it.
    QVERIFY(!r.why.isEmpty());
    QCOMPARE(r.error, QStringLiteral("invalid --model '%1': %2").arg(s.model.c_str(), r.why));
  }

  void headlessWithABadModelExitsTwoAndWritesNothing() {
    QTemporaryDir data;
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("XDG_DATA_HOME"), data.path());
    env.insert(QStringLiteral("DDPDESK_WORKER"), kWorker);
    p.setProcessEnvironment(env);
    const QString model = tmp.filePath(QStringLiteral("missing.pt"));
    p.start(QStringLiteral(DDPDESK_BIN),
            {"--headless", "--task", "script", "--nproc", "2", "--model", model, "--train-data",
             file("train.safetensors", "x\n")});
    QVERIFY(p.waitForFinished(kTimeout));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 2);
    const QStringList lines = err.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].startsWith(QStringLiteral("ddpdesk: invalid --model '%1': ").arg(model)),
             qPrintable(err));
    QVERIFY(!QDir(data.filePath(QStringLiteral("ddpdesk"))).exists());  // no run dir, no history
  }

  void userTaskMadeByTheExampleScriptPasses() {
    const QString script = QStringLiteral(DDPDESK_SOURCE_DIR "/examples/make_user_task.py");
    QProcess py;
    py.start(QStringLiteral("/usr/bin/python3"),
             {script, "--out", tmp.filePath("task"), "--data", "synthetic", "--model", "small"});
    if (!py.waitForFinished(kTimeout) || py.exitCode() != 0)
      QSKIP("/usr/bin/python3 with torch could not make the example task");
    RunSpec s;
    s.task = "script";
    s.model = tmp.filePath("task/model.pt").toStdString();
    s.train_data = tmp.filePath("task/train.safetensors").toStdString();
    s.eval_data = tmp.filePath("task/eval.pt").toStdString();
    const TaskCheckResult r = runTaskCheckNow(kWorker, s, kTimeout);
    QVERIFY2(r.ok(), qPrintable(r.error));
    QCOMPARE(r.trainSamples, r.inputShape.value(0));
    QCOMPARE(r.targetShape.value(0), r.trainSamples);
    QVERIFY(r.evalSamples > 0);
    QCOMPARE(r.targetDtype, QStringLiteral("int64"));
    QVERIFY(r.classification);
    QVERIFY2(taskCheckSummary(r).contains(QLatin1String(" train samples [")),
             qPrintable(taskCheckSummary(r)));
  }

  // Samples of the wrong width fail inside the TorchScript interpreter: the one line keeps the
  // interpreter's reason (its last "RuntimeError: ..." line), not its opening line.
  void aShapeMismatchSaysWhy() {
    const QString script = QStringLiteral(DDPDESK_SOURCE_DIR "/examples/make_user_task.py");
    QProcess py;
    py.start(QStringLiteral("/usr/bin/python3"),
             {script, "--out", tmp.filePath("narrow"), "--data", "synthetic", "--model", "small"});
    if (!py.waitForFinished(kTimeout) || py.exitCode() != 0)
      QSKIP("/usr/bin/python3 with torch could not make the example task");
    // The example's 16 features cut to 7.
    py.start(QStringLiteral("/usr/bin/python3"),
             {"-c",
              "import sys, torch; d = torch.load(sys.argv[1]); d['inputs'] = d['inputs'][:, :7]; "
              "torch.save(d, sys.argv[2])",
              tmp.filePath("narrow/train.pt"), tmp.filePath("narrow/wrongdim.pt")});
    QVERIFY(py.waitForFinished(kTimeout) && py.exitCode() == 0);
    RunSpec s;
    s.task = "script";
    s.model = tmp.filePath("narrow/model.pt").toStdString();
    s.train_data = tmp.filePath("narrow/wrongdim.pt").toStdString();
    const TaskCheckResult r = runTaskCheckNow(kWorker, s, kTimeout);
    QCOMPARE(r.status, TaskCheckResult::Status::BadInput);
    QVERIFY2(r.error.startsWith(
                 QStringLiteral("invalid --model '%1': forward failed on samples "
                                "of '%2': RuntimeError: mat1 and mat2 shapes "
                                "cannot be multiplied (")
                     .arg(QString::fromStdString(s.model), QString::fromStdString(s.train_data))),
             qPrintable(r.error));
    QVERIFY2(!r.error.contains(QLatin1Char('\n')), qPrintable(r.error));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTaskCheckReal)
#include "test_task_check_real.moc"

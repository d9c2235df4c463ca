// The task check's pure parts: reading the worker's one line (good, bad, garbage), combining it
// with the exit code, the summary the form shows, and the flags the check is run with.
#include <QtTest>

#include "checks/task_check.h"
#include "qt_test_main.h"
#include "run/worker_arguments.h"

using namespace ddpdesk;

namespace {

const QByteArray kGood =
    R"({"ok":true,"task":"script","parameters":535818,"parameter_tensors":6,"buffers":0,)"
    R"("train_samples":60000,"eval_samples":10000,)"
    R"("input":{"dtype":"float32","shape":[60000,1,28,28]},)"
    R"("target":{"dtype":"int64","shape":[60000]},"output_shape":[10],"loss":"cross_entropy",)"
    R"("classification":true,"warnings":["dropout in the model"]})";

const QByteArray kBad =
    R"j({"ok":false,"field":"model","value":"x.pt","why":"not a TorchScript file )j"
    R"j((PytorchStreamReader failed)","error":"invalid --model 'x.pt': not a TorchScript file )j"
    R"j((PytorchStreamReader failed)"})j";

}  // namespace

class TestTaskCheckParser : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void parsesASuccess() {
    const TaskCheckResult r = parseTaskCheck("loading model.pt\n" + kGood + "\n");
    QCOMPARE(r.status, TaskCheckResult::Status::Ok);
    QCOMPARE(r.task, QStringLiteral("script"));
    QCOMPARE(r.parameters, 535818);
    QCOMPARE(r.parameterTensors, 6);
    QCOMPARE(r.buffers, 0);
    QCOMPARE(r.trainSamples, 60000);
    QCOMPARE(r.evalSamples, 10000);
    QCOMPARE(r.inputDtype, QStringLiteral("float32"));
    QCOMPARE(r.inputShape, (QList<qint64>{60000, 1, 28, 28}));
    QCOMPARE(r.targetDtype, QStringLiteral("int64"));
    QCOMPARE(r.targetShape, (QList<qint64>{60000}));
    QCOMPARE(r.outputShape, (QList<qint64>{10}));
    QCOMPARE(r.loss, QStringLiteral("cross_entropy"));
    QVERIFY(r.classification);
    QCOMPARE(r.warnings, (QStringList{"dropout in the model"}));
  }

  void parsesBadInput() {
    const TaskCheckResult r = parseTaskCheck(kBad);
    QCOMPARE(r.status, TaskCheckResult::Status::BadInput);
    QCOMPARE(r.field, QStringLiteral("model"));
    QCOMPARE(r.error, QStringLiteral("invalid --model 'x.pt': not a TorchScript file "
                                     "(PytorchStreamReader failed)"));
    // Under the field, the field need not name itself.
    QCOMPARE(r.fieldMessage(),
             QStringLiteral("not a TorchScript file (PytorchStreamReader failed)"));
  }

  // The reason comes from the answer's "why", never cut out of the line: a value holding
  // "': " (a path) does not split it, and a line that is no value's stays whole.
  void fieldMessageIsTheAnswersWhy() {
    const TaskCheckResult r = parseTaskCheck(
        R"j({"ok":false,"field":"train_data","value":"a': b.safetensors","why":"no tensor 'inputs'",)j"
        R"j("error":"invalid --train-data 'a': b.safetensors': no tensor 'inputs'"})j");
    QCOMPARE(r.status, TaskCheckResult::Status::BadInput);
    QCOMPARE(r.fieldMessage(), QStringLiteral("no tensor 'inputs'"));
    const TaskCheckResult whole = parseTaskCheck(
        R"j({"ok":false,"field":"resume","error":"cannot load checkpoint 'x.pt': unknown format"})j");
    QCOMPARE(whole.fieldMessage(), whole.error);
  }

  void garbageFails_data() {
    QTest::addColumn<QByteArray>("output");
    QTest::newRow("empty") << QByteArray();
    QTest::newRow("text") << QByteArray("Segmentation fault\n");
    QTest::newRow("truncated") << kGood.left(40);
    QTest::newRow("array") << QByteArray("[1,2,3]\n");
    QTest::newRow("object without ok") << QByteArray(R"({"cuda_available":false})");
  }
  void garbageFails() {
    QFETCH(QByteArray, output);
    const TaskCheckResult r = parseTaskCheck(output);
    QCOMPARE(r.status, TaskCheckResult::Status::Failed);
    QVERIFY(r.error.contains(QLatin1String("no JSON answer")));
  }

  void exitCodeMustFitTheAnswer() {
    QCOMPARE(taskCheckFromExit(0, false, kGood, {}).status, TaskCheckResult::Status::Ok);
    QCOMPARE(taskCheckFromExit(2, false, kBad, "ddpdesk-worker: invalid --model ...\n").status,
             TaskCheckResult::Status::BadInput);
    // A worker that does not know --check: exit 2, no JSON.
    TaskCheckResult r = taskCheckFromExit(
        2, false, {}, "ddpdesk-worker: The following argument was not expected: --check\n");
    QCOMPARE(r.status, TaskCheckResult::Status::Failed);
    QCOMPARE(r.error, QStringLiteral("ddpdesk-worker --check exited with code 2: ddpdesk-worker: "
                                     "The following argument was not expected: --check"));
    // An internal failure: exit 1, the message on stderr.
    r = taskCheckFromExit(1, false, {}, "loading\nddpdesk-worker: out of memory\n\n");
    QCOMPARE(r.status, TaskCheckResult::Status::Failed);
    QVERIFY(r.error.endsWith(QLatin1String("code 1: ddpdesk-worker: out of memory")));
    // ok with a failing exit code is not trusted; nor is a crash.
    QCOMPARE(taskCheckFromExit(1, false, kGood, {}).status, TaskCheckResult::Status::Failed);
    r = taskCheckFromExit(0, true, kGood, {});
    QCOMPARE(r.status, TaskCheckResult::Status::Failed);
    QVERIFY(r.error.contains(QLatin1String("crashed")));
  }

  void summary() {
    TaskCheckResult r = parseTaskCheck(kGood);
    r.parameters = 1234567;
    QCOMPARE(taskCheckSummary(r),
             QStringLiteral("1,234,567 parameters · 60,000 train samples [1,28,28] float32 → "
                            "targets int64 · 10,000 eval samples"));
    r.evalSamples = 0;
    r.targetShape = {60000, 3};
    r.targetDtype = QStringLiteral("float32");
    QCOMPARE(taskCheckSummary(r),
             QStringLiteral("1,234,567 parameters · 60,000 train samples [1,28,28] float32 → "
                            "targets [3] float32 · no eval data"));
    QVERIFY(taskCheckSummary(parseTaskCheck(kBad)).isEmpty());
  }

  void onlyUserTasksNeedTheCheck() {
    for (const TaskInfo& t : task_catalog()) {
      RunSpec s;
      s.task = t.name;
      QCOMPARE(needsTaskCheck(s), t.user_files);
    }
  }

  void argumentsComeFromTheSpecsTaskFields() {
    RunSpec s;
    s.task = "script";
    s.model = "/data/my model.pt";
    s.train_data = "/data/train.safetensors";
    s.loss = "mse";
    s.epochs = 7;
    s.lr = 0.5;
    s.run_dir = "/runs/x";
    s.metrics_file = "/tmp/m.jsonl";
    s.dataset_size = 500;
    const QStringList args = taskCheckArguments(s);
    QCOMPARE(args.first(), QStringLiteral("--check"));
    // The same words a run's launch command has for these fields, unquoted.
    RunSpec only;
    only.task = s.task;
    only.model = s.model;
    only.train_data = s.train_data;
    only.loss = s.loss;
    only.dataset_size = s.dataset_size;
    QCOMPARE(args.mid(1), workerArguments(only));
    QVERIFY(args.contains(QStringLiteral("/data/my model.pt")));
    // Nothing of the run itself reaches the dry run.
    QVERIFY(!args.contains(QStringLiteral("--run-dir")));
    QVERIFY(!args.contains(QStringLiteral("--metrics-file")));
    QVERIFY(!args.contains(QStringLiteral("7")));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTaskCheckParser)
#include "test_task_check_parser.moc"

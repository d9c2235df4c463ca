// The run form with a user task (TaskInfo::user_files): its rows appear only for such a task,
// the task and loss lists come from the shared tables, and the worker's dry run (the fake
// worker's canned `--check`) gates validity: pending -> invalid, bad input -> the message under
// the field the worker named, ok -> the summary under the rows and valid.
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "form/run_spec_form.h"
#include "form/spec_settings.h"
#include "form_typing.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {
constexpr int kTimeout = 30000;  // a check is a process start: generous on a shared machine
}

class TestRunSpecFormUserTask : public QObject {
  Q_OBJECT

  std::unique_ptr<QTemporaryDir> dir;

  QString file(const QString& name, const QByteArray& content = "fake\n") const {
    return writeFile(QDir(dir->path()), name, content);
  }
  static void type(RunSpecForm& form, const QString& key, const QString& text) {
    test::typeInto(form, key, text);
  }
  static QComboBox* combo(RunSpecForm& form, const QString& key) {
    return qobject_cast<QComboBox*>(form.editor(key));
  }
  std::unique_ptr<RunSpecForm> makeForm() const {
    auto form = std::make_unique<RunSpecForm>();
    form->setWorkerProgram([] { return fakeWorker(); });
    form->show();
    return form;
  }
  // A script-task form with both files typed in.
  std::unique_ptr<RunSpecForm> userTaskForm(const QString& model) {
    auto form = makeForm();
    combo(*form, "task")->setCurrentText("script");
    type(*form, "model", model);
    type(*form, "train_data", file("train.safetensors"));
    return form;
  }

 private Q_SLOTS:
  void init() {
    dir = std::make_unique<QTemporaryDir>();
    qunsetenv("FAKE_CHECK_MODE");
    qunsetenv("FAKE_CHECK_MS");
    qunsetenv("FAKE_CHECK_PIDFILE");
  }

  void choicesComeFromTheSharedTables() {
    RunSpecForm form;
    QComboBox* task = combo(form, "task");
    QCOMPARE(task->count(), int(task_catalog().size()));
    for (int i = 0; i < task->count(); ++i) {
      QCOMPARE(task->itemText(i), QString::fromLatin1(task_catalog()[i].name));
      QCOMPARE(task->itemData(i, Qt::ToolTipRole).toString(),
               QString::fromUtf8(task_catalog()[i].description));
    }
    QComboBox* loss = combo(form, "loss");
    QVERIFY(loss);
    QStringList losses;
    for (const std::string& l : known_losses()) losses << QString::fromStdString(l);
    QStringList items;
    for (int i = 0; i < loss->count(); ++i) items << loss->itemText(i);
    QCOMPARE(items, losses);
  }

  void userTaskRowsFollowTheTask() {
    auto form = makeForm();
    QStringList userKeys;
    for (const FieldInfo& f : run_spec_fields())
      if (is_user_task_field(f.key)) userKeys << QString::fromLatin1(f.key);
    QCOMPARE(userKeys.size(), 6);
    for (const TaskInfo& t : task_catalog()) {
      combo(*form, "task")->setCurrentText(QString::fromLatin1(t.name));
      for (const QString& key : userKeys) {
        QVERIFY2(form->isFieldShown(key) == t.user_files, qPrintable(key + " " + t.name));
        QCOMPARE(form->editor(key)->isVisible(), t.user_files);
      }
      // The other rows stay.
      QVERIFY(form->isFieldShown("batch_size"));
      // A built-in task needs no files and no check.
      if (!t.user_files && !t.python_script) QVERIFY2(form->isValid(), t.name);
    }
  }

  void aProblemInAHiddenRowShowsTheRow() {
    auto form = makeForm();
    RunSpec s;
    s.loss = "hinge";  // from a preset: not a known loss
    form->setSpec(s);
    QVERIFY(!form->isValid());
    QVERIFY(form->isFieldShown("loss"));
    QVERIFY(form->errorLabel("loss")->isVisible());
  }

  void filesAreRequiredBeforeAnyCheck() {
    auto form = makeForm();
    combo(*form, "task")->setCurrentText("script");
    QVERIFY(!form->isValid());
    QVERIFY(form->errors().value("model").contains("is required"));
    QVERIFY(form->errors().value("train_data").contains("is required"));
    QVERIFY(!form->waitingOnly());
    QCOMPARE(form->taskCheck().status, TaskCheckResult::Status::Pending);
  }

  void passingCheckShowsTheSummaryAndMakesTheFormValid() {
    qputenv("FAKE_CHECK_MS", "200");
    auto form = userTaskForm(file("model.pt"));
    QSignalSpy validity(form.get(), &RunSpecForm::validityChanged);
    // Pending: invalid, but only waiting; the message says so (not as an error).
    QVERIFY(!form->isValid());
    QVERIFY(form->waitingOnly());
    QVERIFY(form->errors().value("model").contains("checking"));
    QVERIFY(!form->taskCheckLabel()->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(form->isValid(), kTimeout);
    QCOMPARE(validity.count(), 1);
    QCOMPARE(form->taskCheck().status, TaskCheckResult::Status::Ok);
    QVERIFY(!form->errorLabel("model")->isVisible());
    QVERIFY(form->taskCheckLabel()->isVisible());
    QVERIFY2(form->taskCheckLabel()->text().contains(
                 "535,818 parameters · 60,000 train samples [1,28,28] float32 → targets int64 "
                 "· no eval data"),
             qPrintable(form->taskCheckLabel()->text()));
    QVERIFY(form->taskCheckLabel()->text().contains("fake worker"));  // the warnings

    // A field the check does not read keeps the answer; one it reads asks again.
    type(*form, "lr", "0.01");
    QVERIFY(form->isValid());
    type(*form, "eval_data", file("eval.safetensors"));
    QVERIFY(!form->isValid());
    QVERIFY(form->waitingOnly());
    QVERIFY(!form->taskCheckLabel()->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(form->isValid(), kTimeout);
    QVERIFY(form->taskCheckLabel()->text().contains("10,000 eval samples"));
    // Back to a built-in task: no check, no summary.
    combo(*form, "task")->setCurrentText("fmnist-mlp");
    QVERIFY(form->isValid());
    QVERIFY(!form->taskCheckLabel()->isVisible());
  }

  void badInputLandsOnTheFieldTheWorkerNamed() {
    auto form = userTaskForm(file("x.pt", "bad not a TorchScript file (fake)\n"));
    QTRY_COMPARE_WITH_TIMEOUT(form->taskCheck().status, TaskCheckResult::Status::BadInput,
                              kTimeout);
    QVERIFY(!form->isValid());
    QVERIFY(!form->waitingOnly());
    QCOMPARE(form->errors().value("model"), QStringLiteral("not a TorchScript file (fake)"));
    QVERIFY(form->errorLabel("model")->isVisible());
    QCOMPARE(form->errorLabel("model")->text(), QStringLiteral("not a TorchScript file (fake)"));
    QVERIFY(!form->taskCheckLabel()->isVisible());

    // Fixed: the model passes, the missing validation file is named next.
    type(*form, "model", file("model.pt"));
    type(*form, "eval_data", dir->filePath("missing.safetensors"));
    QTRY_COMPARE_WITH_TIMEOUT(form->taskCheck().status, TaskCheckResult::Status::BadInput,
                              kTimeout);
    QVERIFY(!form->errors().contains("model"));
    QCOMPARE(form->errors().value("eval_data"), QStringLiteral("no such file"));
    QVERIFY(form->errorLabel("eval_data")->isVisible());
  }

  void aCheckThatCannotRunKeepsTheFormInvalid() {
    qputenv("FAKE_CHECK_MODE", "crash");
    auto form = userTaskForm(file("model.pt"));
    QTRY_COMPARE_WITH_TIMEOUT(form->taskCheck().status, TaskCheckResult::Status::Failed, kTimeout);
    QVERIFY(!form->isValid());
    QVERIFY(!form->waitingOnly());
    QVERIFY2(form->errors().value("model").startsWith("could not check the model and data: "
                                                      "ddpdesk-worker --check exited with code 1"),
             qPrintable(form->errors().value("model")));
  }

  void aNewerEditWinsOverAnOlderCheck() {
    const QString pidFile = dir->filePath("check.pid");
    qputenv("FAKE_CHECK_PIDFILE", pidFile.toUtf8());
    qputenv("FAKE_CHECK_MS", "60000");
    auto form = userTaskForm(file("x.pt", "bad old model\n"));
    QTRY_VERIFY_WITH_TIMEOUT(QFile(pidFile).size() > 0, kTimeout);  // the first check runs
    QFile f(pidFile);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const qint64 older = f.readAll().trimmed().toLongLong();
    QVERIFY(older > 0);
    qunsetenv("FAKE_CHECK_PIDFILE");
    qputenv("FAKE_CHECK_MS", "0");
    type(*form, "model", file("model.pt"));
    QTRY_VERIFY_WITH_TIMEOUT(form->isValid(), kTimeout);
    // The older check was abandoned (killed): its "bad" answer never reaches the form.
    QTRY_VERIFY_WITH_TIMEOUT(notRunning(older), kTimeout);
    QCoreApplication::processEvents();
    QVERIFY(form->isValid());
    QCOMPARE(form->taskCheck().status, TaskCheckResult::Status::Ok);
  }

  void userTaskFieldsRoundTripThroughPresets() {
    auto form = makeForm();
    RunSpec s;
    s.task = "script";
    s.model = "/data/model.pt";
    s.train_data = "/data/train.safetensors";
    s.eval_data = "/data/eval.pt";
    s.loss = "bce";
    s.input_name = "x";
    s.target_name = "y";
    form->setSpec(s);
    for (const char* key : {"model", "train_data", "eval_data", "loss", "input_name"})
      QVERIFY2(!form->fieldText(QString::fromLatin1(key)).isEmpty(), key);
    const QString path = dir->filePath("user.json");
    QVERIFY(form->savePresetFile(path));
    const PresetLoad back = loadPreset(path);
    QVERIFY(back.problems.isEmpty());
    QCOMPARE(QString::fromStdString(to_json_text(back.spec)),
             QString::fromStdString(to_json_text(s)));
    // The last spec is remembered the same way.
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
    saveLastSpec(form->spec());
    const auto last = loadLastSpec();
    QVERIFY(last.has_value());
    QCOMPARE(QString::fromStdString(to_json_text(*last)), QString::fromStdString(to_json_text(s)));
  }
};

DDPDESK_TEST_MAIN(TestRunSpecFormUserTask)
#include "test_run_spec_form_user_task.moc"

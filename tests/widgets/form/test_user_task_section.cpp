// UserTaskSection on its own: which keys it holds, when its rows are seen (a user task, or a
// problem in one of them), and the dry run's verdict it adds to the form's errors: nothing for a
// built-in task or while a field the check reads is wrong, "checking…" (awaited, not a fault)
// until the fake worker answers, then the worker's complaint on the field it named, or the summary.
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "form/field_row.h"
#include "form/task_check_gate.h"
#include "form/user_task_section.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"

using namespace ddpdesk;

class TestUserTaskSection : public QObject {
  Q_OBJECT

  // A check is a process start: generous on a shared machine.
  static constexpr int kTimeout = 30000;
  std::unique_ptr<QWidget> window;  // owns the section and its rows
  std::unique_ptr<QTemporaryDir> dir;
  UserTaskSection* section = nullptr;
  QMap<QString, FieldRow*> rows;

  RunSpec scriptSpec(const QByteArray& model) const {
    RunSpec s;
    s.task = "script";
    s.model = test::writeFile(QDir(dir->path()), "model.pt", model).toStdString();
    s.train_data = test::writeFile(QDir(dir->path()), "train.safetensors").toStdString();
    return s;
  }
  // The verdict on `spec` with no other problem in the form.
  QMap<QString, QString> verdict(const RunSpec& spec, QSet<QString>* pending = nullptr) {
    QMap<QString, QString> errors;
    QSet<QString> waiting;
    section->applyTaskCheck(spec, errors, waiting);
    if (pending) *pending = waiting;
    return errors;
  }

 private Q_SLOTS:
  void init() {
    qunsetenv("FAKE_CHECK_MODE");
    qunsetenv("FAKE_CHECK_MS");
    dir = std::make_unique<QTemporaryDir>();
    window = std::make_unique<QWidget>();
    section = new UserTaskSection(window.get());
    section->gate()->setWorkerProgram([] { return test::fakeWorker(); });
    section->gate()->setDelay(0);
    rows.clear();
    for (const FieldInfo& f : run_spec_fields()) {
      const QString key = QString::fromLatin1(f.key);
      if (!UserTaskSection::holds(key)) continue;
      rows[key] = new FieldRow(key, {}, section);
      section->addRow(rows[key]);
    }
    window->show();
  }
  void cleanup() {
    window.reset();  // the section, its rows and any check in flight, before their files
    dir.reset();
  }

  void holdsTheUserTasksFieldsOnly() {
    QVERIFY(UserTaskSection::holds("model"));
    QVERIFY(UserTaskSection::holds("target_name"));
    QVERIFY(!UserTaskSection::holds("task"));
    QVERIFY(!UserTaskSection::holds("lr"));
    QVERIFY(!UserTaskSection::holds("slurm_nodes"));
    QCOMPARE(rows.size(), 6);
  }

  void rowsAreSeenForAUserTaskOrAProblemInThem() {
    RunSpec builtin;
    builtin.task = "fmnist-mlp";
    section->showFor(builtin, {});
    for (FieldRow* r : rows) QVERIFY2(r->isHidden(), qPrintable(r->key()));
    QVERIFY(!section->isVisible());

    RunSpec script;
    script.task = "script";
    section->showFor(script, {});
    QVERIFY(section->isVisible());
    for (FieldRow* r : rows) QVERIFY2(r->isVisible(), qPrintable(r->key()));
    QVERIFY(!section->checkLabel()->isVisible());  // no passing check yet

    // A built-in task with a bad loss (from a preset): shown, so the problem can be seen.
    section->showFor(builtin, {{"loss", "must be one of …"}});
    QVERIFY(rows["loss"]->isVisible());
    // A problem elsewhere does not show them.
    section->showFor(builtin, {{"lr", "must be a number"}});
    QVERIFY(rows["loss"]->isHidden());
  }

  void noVerdictForABuiltInTaskOrWhileACheckedFieldIsWrong() {
    RunSpec builtin;
    builtin.task = "seed";
    QSet<QString> pending;
    QVERIFY(verdict(builtin, &pending).isEmpty());
    QVERIFY(pending.isEmpty());

    const RunSpec spec = scriptSpec("fake\n");
    QMap<QString, QString> errors{{"train_data", "is required"}};
    QSet<QString> waiting;
    section->applyTaskCheck(spec, errors, waiting);
    QCOMPARE(errors.size(), 1);  // the field's own message says what to fix first
    QVERIFY(waiting.isEmpty());
    QCOMPARE(section->taskCheck().status, TaskCheckResult::Status::Pending);
    QVERIFY(!section->gate()->running());
  }

  void awaitedThenPassing() {
    const RunSpec spec = scriptSpec("fake\n");
    QSignalSpy answered(section, &UserTaskSection::answered);
    QSet<QString> pending;
    const auto waiting = verdict(spec, &pending);
    QVERIFY(waiting.value("model").contains("checking"));
    QCOMPARE(pending, QSet<QString>{"model"});
    QTRY_VERIFY_WITH_TIMEOUT(answered.count() > 0, kTimeout);
    QCOMPARE(section->taskCheck().status, TaskCheckResult::Status::Ok);
    QVERIFY(verdict(spec, &pending).isEmpty());
    QVERIFY(pending.isEmpty());
    section->showFor(spec, {});
    QVERIFY(section->checkLabel()->isVisible());
    QVERIFY2(section->checkLabel()->text().contains("60,000 train samples"),
             qPrintable(section->checkLabel()->text()));
  }

  void aComplaintLandsOnTheFieldTheWorkerNamed() {
    const RunSpec spec = scriptSpec("bad not a TorchScript file (fake)\n");
    verdict(spec);
    QTRY_COMPARE_WITH_TIMEOUT(section->taskCheck().status, TaskCheckResult::Status::BadInput,
                              kTimeout);
    QSet<QString> pending;
    const auto errors = verdict(spec, &pending);
    QCOMPARE(errors.value("model"), QStringLiteral("not a TorchScript file (fake)"));
    QVERIFY(pending.isEmpty());  // a problem, not an awaited answer
    section->showFor(spec, errors);
    QVERIFY(!section->checkLabel()->isVisible());
  }
};

DDPDESK_TEST_MAIN(TestUserTaskSection)
#include "test_user_task_section.moc"

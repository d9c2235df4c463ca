// The run form with task python: the script's rows (script, arguments, interpreter, working
// directory) appear only for it, with the placeholders named; the script is required, an
// unknown {placeholder} is shown under the arguments, and a spec with a script is valid.
#include <QComboBox>
#include <QLabel>
#include <QtTest>

#include "form/run_spec_form.h"
#include "form_typing.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

class TestRunSpecFormPython : public QObject {
  Q_OBJECT

  static QComboBox* combo(RunSpecForm& form, const QString& key) {
    return qobject_cast<QComboBox*>(form.editor(key));
  }
  static std::unique_ptr<RunSpecForm> makeForm() {
    auto form = std::make_unique<RunSpecForm>();
    form->setWorkerProgram([] { return fakeWorker(); });
    form->show();
    return form;
  }

 private Q_SLOTS:
  void scriptRowsFollowTheTask() {
    auto form = makeForm();
    const QStringList keys = {"script", "script_args", "python", "workdir"};
    for (const TaskInfo& t : task_catalog()) {
      combo(*form, "task")->setCurrentText(QString::fromLatin1(t.name));
      for (const QString& key : keys) {
        QVERIFY2(form->isFieldShown(key) == t.python_script, qPrintable(key + " " + t.name));
        QCOMPARE(form->editor(key)->isVisible(), t.python_script);
      }
    }
    combo(*form, "task")->setCurrentText("python");
    const auto* hint = form->findChild<QLabel*>(QStringLiteral("script_hint"));
    QVERIFY(hint && hint->isVisible());
    QVERIFY(hint->text().contains(QStringLiteral("{batch_size} {accum_steps}")));
  }

  void scriptIsRequiredAndPlaceholdersChecked() {
    auto form = makeForm();
    combo(*form, "task")->setCurrentText("python");
    QVERIFY(!form->isValid());
    QVERIFY(form->errors().value("script").contains("is required with task python"));
    typeInto(*form, "script", "/work/train.py");
    QVERIFY2(form->isValid(), qPrintable(form->errors().values().join('|')));
    typeInto(*form, "script_args", "--bs {batch_size} --x {bogus}");
    QVERIFY(!form->isValid());
    QVERIFY(form->errorLabel("script_args")->isVisible());
    QVERIFY(form->errors().value("script_args").contains("{bogus}"));
    typeInto(*form, "script_args", "--bs {batch_size} --out {run_dir}");
    QVERIFY(form->isValid());
    QCOMPARE(form->spec().script_args, std::string("--bs {batch_size} --out {run_dir}"));
  }

  // Switching to another task keeps what was typed (to switch back) without hiding a problem.
  void aBadArgumentInTheHiddenRowsShowsThem() {
    auto form = makeForm();
    RunSpec s;
    s.task = "seed";
    s.script_args = "{bogus}";
    form->setSpec(s);
    QVERIFY(!form->isValid());
    QVERIFY(form->isFieldShown("script_args"));
  }
};

DDPDESK_TEST_MAIN(TestRunSpecFormPython)
#include "test_run_spec_form_python.moc"

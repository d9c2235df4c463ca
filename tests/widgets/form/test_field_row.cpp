// FieldRow, one field of the run form on its own: the editor a field gets, its value as the spec's
// text both ways (an empty dataset size is "0", a preset's unknown choice is kept), edited() on a
// change, and the problem and hint lines under the editor.
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QToolButton>
#include <QtTest>

#include "form/field_row.h"
#include "qt_test_main.h"
#include "run_spec.h"

using namespace ddpdesk;

class TestFieldRow : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // Every field the form shows is labelled in words, not with its JSON key.
  void everyFieldHasALabel() {
    for (const FieldInfo& f : run_spec_fields()) {
      const QString key = QString::fromLatin1(f.key);
      QVERIFY2(FieldRow::labelFor(key) != key, f.key);
    }
  }

  void eachFieldGetsTheEditorOfItsKind() {
    QWidget parent;
    FieldRow task("task", "help", &parent);
    auto* combo = qobject_cast<QComboBox*>(task.editor());
    QVERIFY(combo);
    QCOMPARE(combo->count(), int(task_catalog().size()));
    QCOMPARE(combo->itemData(0, Qt::ToolTipRole).toString(),
             QString::fromUtf8(task_catalog()[0].description));
    QCOMPARE(task.editor()->objectName(), QStringLiteral("task"));
    QCOMPARE(task.error()->objectName(), QStringLiteral("task_error"));
    QCOMPARE(task.label()->text(), QStringLiteral("Task"));
    QCOMPARE(task.label()->parent(), &parent);  // for the form's label column
    QCOMPARE(task.label()->toolTip(), QStringLiteral("help"));

    QVERIFY(qobject_cast<QCheckBox*>(FieldRow("tensorboard", {}, &parent).editor()));
    QVERIFY(qobject_cast<QSpinBox*>(FieldRow("nproc", {}, &parent).editor()));
    FieldRow lr("lr", {}, &parent);
    QVERIFY(qobject_cast<QLineEdit*>(lr.editor()));
    QVERIFY(!lr.findChild<QToolButton*>());  // a number has nothing to choose
    FieldRow model("model", {}, &parent);
    QVERIFY(qobject_cast<QLineEdit*>(model.editor()));
    QVERIFY(model.findChild<QToolButton*>());  // a file does
    QCOMPARE(FieldRow::labelFor("batch_size"), QStringLiteral("Batch size"));
    QCOMPARE(FieldRow::labelFor("no_such_key"), QStringLiteral("no_such_key"));
  }

  void textIsTheSpecsTextBothWays() {
    QWidget parent;
    FieldRow device("device", {}, &parent);
    device.setText("cuda");
    QCOMPARE(device.text(), QStringLiteral("cuda"));
    device.setText("tpu");  // from a preset: kept and shown, so its error can name it
    QCOMPARE(device.text(), QStringLiteral("tpu"));

    FieldRow nproc("nproc", {}, &parent);
    nproc.setText("0");  // below the spec's range: a message, not a clamp
    QCOMPARE(nproc.text(), QStringLiteral("0"));
    nproc.setText("300");
    QCOMPARE(nproc.text(), QStringLiteral("300"));

    FieldRow tb("tensorboard", {}, &parent);
    QCOMPARE(tb.text(), QStringLiteral("0"));
    tb.setText("true");
    QCOMPARE(tb.text(), QStringLiteral("1"));
    tb.setText("0");
    QCOMPARE(tb.text(), QStringLiteral("0"));

    FieldRow size("dataset_size", {}, &parent);
    size.setText("0");  // the task default: an empty editor (its placeholder names the default)
    QCOMPARE(qobject_cast<QLineEdit*>(size.editor())->text(), QString());
    QCOMPARE(size.text(), QStringLiteral("0"));
    size.setText("1200");
    QCOMPARE(size.text(), QStringLiteral("1200"));

    FieldRow name("name", {}, &parent);
    name.setText("");  // only the dataset size reads empty as 0
    QCOMPARE(name.text(), QString());
  }

  void editingEmitsEdited() {
    QWidget parent;
    FieldRow lr("lr", {}, &parent);
    QSignalSpy edited(&lr, &FieldRow::edited);
    QSignalSpy picked(&lr, &FieldRow::filePicked);
    QTest::keyClicks(lr.editor(), "0.5");
    QCOMPARE(edited.count(), 3);  // one per keystroke
    QCOMPARE(lr.text(), QStringLiteral("0.5"));
    QCOMPARE(picked.count(), 0);  // typing is not picking a file

    FieldRow task("task", {}, &parent);
    QSignalSpy taskEdited(&task, &FieldRow::edited);
    qobject_cast<QComboBox*>(task.editor())->setCurrentIndex(1);
    QCOMPARE(taskEdited.count(), 1);
    FieldRow tb("tensorboard", {}, &parent);
    QSignalSpy tbEdited(&tb, &FieldRow::edited);
    qobject_cast<QCheckBox*>(tb.editor())->click();
    QCOMPARE(tbEdited.count(), 1);
  }

  void showsTheProblemAndHidesTheHintBehindIt() {
    QWidget parent;
    FieldRow nproc("nproc", {}, &parent);
    parent.show();
    nproc.showError("must be an integer from 1 to 64", false);
    QVERIFY(nproc.error()->isVisible());
    QCOMPARE(nproc.error()->text(), QStringLiteral("must be an integer from 1 to 64"));
    const QString errorStyle = nproc.error()->styleSheet();
    nproc.showHint("more ranks than cores");
    QVERIFY(!nproc.hint()->isVisible());  // the problem says more

    nproc.showError("waiting for the probe", true);  // an awaited answer looks different
    QVERIFY(nproc.error()->isVisible());
    QVERIFY(nproc.error()->styleSheet() != errorStyle);

    nproc.showError(QString(), false);
    QVERIFY(!nproc.error()->isVisible());
    QCOMPARE(nproc.error()->styleSheet(), errorStyle);
    nproc.showHint("more ranks than cores");
    QVERIFY(nproc.hint()->isVisible());
    QCOMPARE(nproc.hint()->text(), QStringLiteral("more ranks than cores"));
    nproc.showHint(QString());
    QVERIFY(!nproc.hint()->isVisible());
  }
};

DDPDESK_TEST_MAIN(TestFieldRow)
#include "test_field_row.moc"

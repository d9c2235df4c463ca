// The run form: what is typed becomes the right RunSpec; bad values are rejected with the shared
// rules' message next to the field; the GPU count is bounded by the probe; presets round-trip.
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "form/run_spec_form.h"
#include "form/spec_settings.h"
#include "form_typing.h"
#include "qt_test_main.h"
#include "run/worker_arguments.h"

using namespace ddpdesk;

class TestRunSpecForm : public QObject {
  Q_OBJECT

  static void type(RunSpecForm& form, const QString& key, const QString& text) {
    test::typeInto(form, key, text);
  }

 private Q_SLOTS:
  // A 0/1 field is a checkbox; the spec, the JSON and the ranks' flags follow it.
  void tensorBoardIsACheckbox() {
    RunSpecForm form;
    auto* box = qobject_cast<QCheckBox*>(form.editor("tensorboard"));
    QVERIFY(box);
    QVERIFY(!box->isChecked());
    QVERIFY(!form.spec().tensorboard);
    QVERIFY(!workerArguments(form.spec()).contains("--tensorboard"));
    box->click();
    QVERIFY(form.spec().tensorboard);
    QVERIFY(form.isValid());  // no run directory needed here: the monitor gives the ranks one
    QCOMPARE(form.fieldText("tensorboard"), QStringLiteral("1"));
    const QStringList args = workerArguments(form.spec());
    QCOMPARE(args.value(args.indexOf("--tensorboard") + 1), QStringLiteral("1"));
    RunSpec off;
    form.setSpec(off);
    QVERIFY(!box->isChecked());
    RunSpec on;
    on.tensorboard = true;
    form.setSpec(on);
    QVERIFY(box->isChecked());
  }

  void hasAnEditorForEveryField() {
    RunSpecForm form;
    for (const FieldInfo& f : run_spec_fields())
      QVERIFY2(form.editor(QString::fromLatin1(f.key)), f.key);
    QVERIFY(form.isValid());  // defaults are valid
  }

  void producesTheSpec() {
    RunSpecForm form;
    qobject_cast<QComboBox*>(form.editor("task"))->setCurrentText("fmnist-mlp");
    qobject_cast<QSpinBox*>(form.editor("nproc"))->setValue(3);
    type(form, "batch_size", "64");
    type(form, "accum_steps", "4");
    type(form, "epochs", "2");
    type(form, "lr", "2.5e-4");
    type(form, "weight_decay", "0.01");
    type(form, "seed", "42");
    type(form, "dataset_size", "6000");
    type(form, "log_interval", "10");
    type(form, "name", "trial");
    QVERIFY2(form.isValid(), qPrintable(QStringList(form.errors().keys()).join(',')));
    const RunSpec s = form.spec();
    QCOMPARE(s.task, std::string("fmnist-mlp"));
    QCOMPARE(s.device, std::string("cpu"));
    QCOMPARE(s.nproc, 3);
    QCOMPARE(s.batch_size, 64);
    QCOMPARE(s.accum_steps, 4);
    QCOMPARE(s.epochs, 2);
    QCOMPARE(s.lr, 2.5e-4);
    QCOMPARE(s.weight_decay, 0.01);
    QCOMPARE(s.seed, std::int64_t(42));
    QCOMPARE(s.dataset_size, std::int64_t(6000));
    QCOMPARE(s.log_interval, 10);
    QCOMPARE(s.name, std::string("trial"));
    // Effective global batch, as typed.
    QCOMPARE(form.effectiveBatchText(), QStringLiteral("3 × 64 × 4 = 768"));
  }

  void rejectsBadValuesWithTheSharedMessage_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("text");
    QTest::newRow("batch 0") << "batch_size"
                             << "0";
    QTest::newRow("batch text") << "batch_size"
                                << "four";
    QTest::newRow("accum negative") << "accum_steps"
                                    << "-1";
    QTest::newRow("lr zero") << "lr"
                             << "0";
    QTest::newRow("lr text") << "lr"
                             << "fast";
    QTest::newRow("weight decay > 1") << "weight_decay"
                                      << "2";
    QTest::newRow("epochs empty") << "epochs"
                                  << "";
    QTest::newRow("name slash") << "name"
                                << "a/b";
    QTest::newRow("timeout") << "collective_timeout"
                             << "0.1";
  }
  void rejectsBadValuesWithTheSharedMessage() {
    QFETCH(QString, key);
    QFETCH(QString, text);
    RunSpecForm form;
    form.show();
    QSignalSpy validity(&form, &RunSpecForm::validityChanged);
    type(form, key, text);
    QVERIFY(!form.isValid());
    QCOMPARE(validity.count(), 1);
    QCOMPARE(validity.first().first().toBool(), false);
    // The message is the one the CLI and config files give for this field and value.
    RunSpec spec;
    nlohmann::json one = nlohmann::json::object();
    one[key.toStdString()] = text.toStdString();
    auto errs = apply_fields(one, spec);
    if (errs.empty()) errs = validate_field(spec, key.toStdString());
    QVERIFY(!errs.empty());
    QLabel* label = form.errorLabel(key);
    QVERIFY(label->isVisible());
    QCOMPARE(label->text(), QString::fromStdString(errs.front().allowed));
    QCOMPARE(form.errors().value(key), label->text());
    // Other fields show nothing.
    QVERIFY(!form.errorLabel("task")->isVisible());
    // Fixing it clears the message and makes the form valid again.
    type(form, key,
         QString::fromStdString(nlohmann::json(to_json(RunSpec())[key.toStdString()]).dump())
             .remove('"'));
    QVERIFY(form.isValid());
    QVERIFY(!label->isVisible());
  }

  void crossFieldRuleLandsOnItsField() {
    RunSpecForm form;
    qobject_cast<QSpinBox*>(form.editor("nproc"))->setValue(4);
    type(form, "dataset_size", "3");
    QVERIFY(!form.isValid());
    QVERIFY(form.errors().value("dataset_size").contains("at least nproc (4)"));
  }

  void nprocOutsideTheSpecRangeIsAMessageNotAClamp() {
    RunSpecForm form;
    RunSpec s;
    s.nproc = 0;
    form.setSpec(s);
    QCOMPARE(form.spec().nproc, 0);
    QVERIFY(form.errors().value("nproc").contains("from 1 to 64"));
  }

  void gpuCountIsBoundedByTheProbe() {
    RunSpecForm form;
    qobject_cast<QSpinBox*>(form.editor("nproc"))->setValue(2);
    qobject_cast<QComboBox*>(form.editor("device"))->setCurrentText("cuda");
    // Until the probe answers, a CUDA run cannot start.
    QVERIFY(!form.isValid());
    QVERIFY(form.errors().contains("device"));

    ProbeResult one;
    one.status = ProbeResult::Status::Ok;
    one.cudaAvailable = true;
    one.deviceCount = 1;
    one.deviceNames = {"NVIDIA H200"};
    form.setProbeResult(one);
    QVERIFY(!form.isValid());
    QVERIFY(form.errors().value("nproc").contains("at most 1"));
    qobject_cast<QSpinBox*>(form.editor("nproc"))->setValue(1);
    QVERIFY(form.isValid());

    ProbeResult none = one;
    none.cudaAvailable = false;
    none.deviceCount = 0;
    form.setProbeResult(none);
    QCOMPARE(form.errors().value("device"),
             QStringLiteral("needs a CUDA GPU and this machine has none"));
    // The worker says why: the field's error and the Device list's cuda item say it too.
    none.cudaMissing = QStringLiteral("this build's LibTorch 1.13.0 has no CUDA");
    form.setProbeResult(none);
    QCOMPARE(form.errors().value("device"), none.cudaMissing);
    auto* devices = qobject_cast<QComboBox*>(form.editor("device"));
    QCOMPARE(devices->itemData(devices->findText("cuda"), Qt::ToolTipRole).toString(),
             none.cudaMissing);
    // CPU runs do not care about GPUs.
    qobject_cast<QComboBox*>(form.editor("device"))->setCurrentText("cpu");
    qobject_cast<QSpinBox*>(form.editor("nproc"))->setValue(8);
    QVERIFY(form.isValid());
  }

  // The dataset size's placeholder names the task's default; a Python script reads its own data.
  void datasetDefaultFollowsTheTask() {
    RunSpecForm form;
    auto* size = qobject_cast<QLineEdit*>(form.editor("dataset_size"));
    QVERIFY(size);
    qobject_cast<QComboBox*>(form.editor("task"))->setCurrentText("fmnist-mlp");
    QCOMPARE(size->placeholderText(), QStringLiteral("60,000 (task default)"));
    qobject_cast<QComboBox*>(form.editor("task"))->setCurrentText("python");
    QCOMPARE(size->placeholderText(), QStringLiteral("the script's own data (not used)"));
  }

  // A training script gets no weight decay and no log interval (no placeholder carries them):
  // their fields are greyed for it, and usable again for a built-in task.
  void fieldsAScriptDoesNotGetAreGreyed() {
    RunSpecForm form;
    auto* task = qobject_cast<QComboBox*>(form.editor("task"));
    task->setCurrentText("python");
    for (const char* key : {"weight_decay", "log_interval"})
      QVERIFY2(!form.editor(key)->isEnabled(), key);
    QVERIFY(form.editor("lr")->isEnabled());
    QVERIFY(form.editor("batch_size")->isEnabled());
    task->setCurrentText("fmnist-cnn");
    for (const char* key : {"weight_decay", "log_interval"})
      QVERIFY2(form.editor(key)->isEnabled(), key);
  }

  // Restarts resume from checkpoints: with none set, the form says which interval they bring.
  void restartsSayTheCheckpointsTheyBring() {
    RunSpecForm form;
    RunSpec s;
    s.max_restarts = 2;
    form.setSpec(s);
    auto* hint = form.findChild<QLabel*>(QStringLiteral("max_restarts_hint"));
    QVERIFY(hint);
    QCOMPARE(hint->text(),
             QStringLiteral("restarts resume from checkpoints: one every 10 min unless set"));
    QVERIFY(!hint->isHidden());
    s.checkpoint_every = 100;
    form.setSpec(s);
    QVERIFY(hint->isHidden());
  }

  void presetsRoundTrip() {
    QTemporaryDir dir;
    RunSpecForm form;
    RunSpec s;
    s.task = "fmnist-cnn";
    s.nproc = 2;
    s.batch_size = 32;
    s.accum_steps = 3;
    s.lr = 0.003;
    s.name = "cnn";
    form.setSpec(s);
    const QString path = dir.filePath("p.json");
    QVERIFY(form.savePresetFile(path));
    RunSpecForm other;
    QVERIFY(other.loadPresetFile(path).isEmpty());
    QCOMPARE(QString::fromStdString(to_json_text(other.spec())),
             QString::fromStdString(to_json_text(s)));
    // The file is the RunSpec JSON that --config takes.
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(parse_run_spec(f.readAll().toStdString()).ok());
  }

  void presetWithBadFieldsAppliesTheRest() {
    QTemporaryDir dir;
    const QString path = dir.filePath("bad.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"task":"fmnist-mlp","batch_size":"lots","epochs":0,"bogus":1})");
    f.close();
    RunSpecForm form;
    const QStringList problems = form.loadPresetFile(path);
    QCOMPARE(problems.size(), 2);  // batch_size does not convert, bogus is unknown
    QCOMPARE(form.spec().task, std::string("fmnist-mlp"));
    // An out-of-range value is loaded and shown as an error, so it can be fixed in place.
    QVERIFY(form.errors().contains("epochs"));
  }

  void builtinPresetsAreValid() {
    RunSpecForm form;  // registers the resources
    QVERIFY(!builtinPresets().isEmpty());
    for (const auto& [name, path] : builtinPresets()) {
      QVERIFY2(form.loadPresetFile(path).isEmpty(), qPrintable(name));
      if (form.spec().device == "cpu") QVERIFY2(form.isValid(), qPrintable(name));
    }
  }
};

DDPDESK_TEST_MAIN(TestRunSpecForm)
#include "test_run_spec_form.moc"

// The run form's launcher section and the Slurm preview: choosing Slurm shows the job's fields
// (and hides the local process count), what is typed becomes the spec and comes back from it,
// a bad time limit is named under its field, and the preview shows the batch script for the
// spec with Copy and Submit, creating nothing on disk.
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "form/launcher_section.h"
#include "form/run_spec_form.h"
#include "form/slurm_preview_dialog.h"
#include "form_typing.h"
#include "qt_test_main.h"

using namespace ddpdesk;

Q_DECLARE_METATYPE(ddpdesk::RunSpec)

class TestRunSpecFormSlurm : public QObject {
  Q_OBJECT

  static void type(RunSpecForm& form, const QString& key, const QString& text) {
    test::typeInto(form, key, text);
  }

  static RunSpec slurmSpec() {
    RunSpec s;
    s.task = "fmnist-mlp";
    s.launcher = "slurm";
    s.slurm_nodes = 2;
    s.slurm_tasks_per_node = 4;
    s.slurm_partition = "gpu";
    s.slurm_time = "1:30:00";
    s.slurm_account = "proj7";
    s.slurm_extra = "--qos=debug;--exclusive";
    return s;
  }

 private Q_SLOTS:
  void localHidesTheSlurmRows() {
    RunSpecForm form;
    form.show();
    QVERIFY(form.launcherSection());
    QCOMPARE(form.fieldText("launcher"), QStringLiteral("local"));
    QVERIFY(form.isFieldShown("launcher"));
    QVERIFY(form.isFieldShown("nproc"));
    for (const char* k : {"slurm_nodes", "slurm_tasks_per_node", "slurm_partition", "slurm_time",
                          "slurm_account", "slurm_extra", "slurm_requeue"})
      QVERIFY2(!form.isFieldShown(k), k);
  }

  void typedFieldsBecomeTheSpec() {
    RunSpecForm form;
    form.show();
    auto* launcher = qobject_cast<QComboBox*>(form.editor("launcher"));
    QVERIFY(launcher);
    launcher->setCurrentText("slurm");
    QVERIFY(form.spec().is_slurm());
    QVERIFY(form.isFieldShown("slurm_nodes"));
    QVERIFY(!form.isFieldShown("nproc"));  // the job's ranks are nodes x ranks per node
    auto* requeue = qobject_cast<QCheckBox*>(form.editor("slurm_requeue"));
    QVERIFY(requeue && form.isFieldShown("slurm_requeue"));
    requeue->setChecked(true);
    QVERIFY(form.spec().slurm_requeue);
    type(form, "slurm_nodes", "3");
    type(form, "slurm_tasks_per_node", "4");
    type(form, "slurm_partition", "batch");
    type(form, "slurm_time", "2-12:00");
    type(form, "slurm_account", "acct.1");
    type(form, "slurm_extra", "--qos=low; --gres=gpu:4");
    QVERIFY2(form.isValid(), qPrintable(form.errors().values().join("; ")));
    const RunSpec s = form.spec();
    QCOMPARE(s.slurm_nodes, 3);
    QCOMPARE(s.slurm_tasks_per_node, 4);
    QCOMPARE(s.slurm_partition, std::string("batch"));
    QCOMPARE(s.slurm_time, std::string("2-12:00"));
    QCOMPARE(s.slurm_account, std::string("acct.1"));
    QCOMPARE(s.slurm_extra, std::string("--qos=low; --gres=gpu:4"));
    QCOMPARE(s.world_size(), 12);
    QVERIFY2(form.effectiveBatchText().startsWith("12 × "), qPrintable(form.effectiveBatchText()));
  }

  void specRoundTrips() {
    RunSpecForm form;
    form.setSpec(slurmSpec());
    QCOMPARE(form.fieldText("launcher"), QStringLiteral("slurm"));
    QCOMPARE(form.fieldText("slurm_time"), QStringLiteral("1:30:00"));
    QCOMPARE(form.fieldText("slurm_extra"), QStringLiteral("--qos=debug;--exclusive"));
    QVERIFY(form.isValid());
    QCOMPARE(to_json(form.spec()), to_json(slurmSpec()));
    // Back to local: the Slurm values stay in the spec (to switch back), the rows hide.
    form.setFieldText("launcher", "local");
    QVERIFY(!form.spec().is_slurm());
    QCOMPARE(form.spec().slurm_nodes, 2);
  }

  void badTimeIsNamedUnderItsField() {
    RunSpecForm form;
    form.show();
    form.setSpec(slurmSpec());
    type(form, "slurm_time", "1:2:3:4");
    QVERIFY(!form.isValid());
    QVERIFY(form.errors().value("slurm_time").contains("sbatch --time"));
    QVERIFY(form.errorLabel("slurm_time")->isVisible());
    // Shown even with the local launcher: a problem in a hidden row would block Start unseen.
    form.setFieldText("launcher", "local");
    QVERIFY(form.isFieldShown("slurm_time"));
  }

  void previewShowsTheScriptAndCreatesNothing() {
    QTemporaryDir tmp;
    RunSpec spec = slurmSpec();
    spec.run_dir = (tmp.path() + "/run1").toStdString();
    SlurmPreviewDialog dialog(spec, "/opt/ddpdesk/ddpdesk-worker");
    const QString text = dialog.scriptText();
    QVERIFY(text.startsWith("#!/bin/bash\n"));
    for (const QString& line :
         {QStringLiteral("#SBATCH --nodes=2"), QStringLiteral("#SBATCH --ntasks-per-node=4"),
          QStringLiteral("#SBATCH --partition=gpu"), QStringLiteral("#SBATCH --time=1:30:00"),
          QStringLiteral("#SBATCH --account=proj7"), QStringLiteral("#SBATCH --qos=debug"),
          QStringLiteral("#SBATCH --exclusive")})
      QVERIFY2(text.contains(line + "\n"), qPrintable(line));
    QVERIFY(text.contains(" /opt/ddpdesk/ddpdesk-worker --config " + tmp.path() +
                          "/run1/spec.json --run-dir " + tmp.path() + "/run1\n"));
    dialog.copyButton()->click();
    QCOMPARE(QApplication::clipboard()->text(), text);
    QSignalSpy submitted(&dialog, &SlurmPreviewDialog::submitRequested);
    dialog.submitButton()->click();
    QCOMPARE(submitted.count(), 1);
    const RunSpec out = submitted.first().first().value<RunSpec>();
    QCOMPARE(out.run_dir, spec.run_dir);
    QCOMPARE(out.slurm_partition, spec.slurm_partition);
    QVERIFY(!QFileInfo::exists(tmp.path() + "/run1"));  // the controller creates it, not this
  }

  void previewFixesANewRunDirectory() {
    QTemporaryDir tmp;
    qputenv("XDG_DATA_HOME", tmp.path().toLocal8Bit());
    RunSpec spec = slurmSpec();
    SlurmPreviewDialog dialog(spec, "/w");
    const QString dir = QString::fromStdString(dialog.spec().run_dir);
    QVERIFY2(dir.startsWith(tmp.path() + "/ddpdesk/runs/"), qPrintable(dir));
    QVERIFY(dialog.scriptText().contains("--run-dir " + dir + "\n"));
    QVERIFY(!QFileInfo::exists(dir));
  }
};

DDPDESK_TEST_MAIN(TestRunSpecFormSlurm)
#include "test_run_spec_form_slurm.moc"

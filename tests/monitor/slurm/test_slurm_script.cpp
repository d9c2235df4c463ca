// The batch script for a Slurm run: its #SBATCH lines for the spec's launcher fields, the srun
// line with each rank's output in its own file, the stop file the ranks are told of, quoting,
// and resume.
#include <QtTest>

#include "qt_test_main.h"
#include "run_spec.h"
#include "slurm/slurm_script.h"

using namespace ddpdesk;

class TestSlurmScript : public QObject {
  Q_OBJECT

  static RunSpec slurmSpec() {
    RunSpec s;
    s.task = "fmnist-mlp";
    s.launcher = "slurm";
    s.slurm_nodes = 2;
    s.slurm_tasks_per_node = 4;
    return s;
  }

 private Q_SLOTS:
  void minimalScript() {
    const QString text = slurmBatchScript(slurmSpec(), QStringLiteral("/shared/runs/r1"),
                                          QStringLiteral("/opt/ddpdesk/bin/ddpdesk-worker"), {});
    const QString expected = QStringLiteral(
        "#!/bin/bash\n"
        "#SBATCH --job-name=ddpdesk-fmnist-mlp\n"
        "#SBATCH --nodes=2\n"
        "#SBATCH --ntasks-per-node=4\n"
        "#SBATCH --output=/shared/runs/r1/slurm-%j.out\n"
        "#SBATCH --no-requeue\n"
        "\n"
        "# Written by ddpdesk. Each rank's output goes to rank-<N>.log here;\n"
        "# the ranks' messages to metrics/rank-<N>.jsonl, which ddpdesk follows.\n"
        "# A stop asked for before the ranks start: they see this file and stop.\n"
        "export DDPDESK_STOP_FILE=/shared/runs/r1/stop-requested\n"
        "# A stop's SIGTERM is ignored until a rank has loaded and set its own handler: the file\n"
        "# above stops it then (SIG_IGN survives exec; the worker replaces it).\n"
        "srun --kill-on-bad-exit=1 --output=/shared/runs/r1/rank-%t.log "
        "/bin/sh -c 'trap \"\" TERM INT; exec \"$@\"' ddpdesk-task "
        "/opt/ddpdesk/bin/ddpdesk-worker --config /shared/runs/r1/spec.json "
        "--run-dir /shared/runs/r1\n");
    QCOMPARE(text, expected);
  }

  void everyOptionAndResume() {
    RunSpec s = slurmSpec();
    s.name = "my run/2";
    s.slurm_partition = "gpu";
    s.slurm_time = "1:30:00";
    s.slurm_account = "proj7";
    s.slurm_extra = "--qos=debug; --gres=gpu:4\n--exclusive";
    const QString text = slurmBatchScript(s, QStringLiteral("/r"), QStringLiteral("/w"),
                                          QStringLiteral("/r/checkpoints/step-00000008.pt"));
    const QStringList lines = text.split(QLatin1Char('\n'));
    QCOMPARE(lines.mid(1, 11),
             QStringList({"#SBATCH --job-name=ddpdesk-my_run_2", "#SBATCH --nodes=2",
                          "#SBATCH --ntasks-per-node=4", "#SBATCH --partition=gpu",
                          "#SBATCH --time=1:30:00", "#SBATCH --account=proj7",
                          "#SBATCH --output=/r/slurm-%j.out", "#SBATCH --no-requeue",
                          "#SBATCH --qos=debug", "#SBATCH --gres=gpu:4", "#SBATCH --exclusive"}));
    QVERIFY2(
        text.endsWith(QStringLiteral("--run-dir /r --resume /r/checkpoints/step-00000008.pt\n")),
        qPrintable(text));
  }

  void quotesForBash() {
    const QString text =
        slurmBatchScript(slurmSpec(), QStringLiteral("/r"),
                         QStringLiteral("/opt/my tools/ddpdesk-worker"), QStringLiteral("/r/it's"));
    QVERIFY2(text.contains(QStringLiteral(" '/opt/my tools/ddpdesk-worker' ")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("--resume '/r/it'\\''s'")), qPrintable(text));
  }

  // A Python-script run: what the script is told exported, the client first on PYTHONPATH, and
  // each task started through the ddpdesk-rank beside the worker in the working directory, its
  // placeholders filled; no signal ignored (the script's own handling, as under torchrun).
  void scriptRun() {
    RunSpec s = slurmSpec();
    s.task = "python";
    s.script = "/home/u/train.py";
    s.script_args = "--bs {batch_size} --out '{run_dir}/x y'";
    s.workdir = "/home/u";
    s.batch_size = 24;
    s.accum_steps = 3;
    s.lr = 0.001;
    const QString text = slurmBatchScript(s, QStringLiteral("/shared/r1"),
                                          QStringLiteral("/opt/dd/bin/ddpdesk-worker"),
                                          QStringLiteral("/shared/r1"));
    const QStringList lines = text.split(QLatin1Char('\n'));
    for (const char* line :
         {"export DDPDESK_STOP_FILE=/shared/r1/stop-requested", "export TORCHELASTIC_RUN_ID=r1",
          "export DDPDESK_BATCH_SIZE=24", "export DDPDESK_ACCUM_STEPS=3", "export DDPDESK_LR=0.001",
          "export DDPDESK_RUN_DIR=/shared/r1", "export DDPDESK_RESUME=/shared/r1",
          "export DDPDESK_DEVICE=cpu", "export PYTHONUNBUFFERED=1",
          "export PYTHONPATH=/opt/dd/share/ddpdesk/python${PYTHONPATH:+:$PYTHONPATH}"})
      QVERIFY2(lines.contains(QLatin1String(line)), line);
    QCOMPARE(lines.at(lines.size() - 2),
             QStringLiteral("srun --kill-on-bad-exit=1 --output=/shared/r1/rank-%t.log "
                            "--chdir=/home/u /opt/dd/bin/ddpdesk-rank python3 /home/u/train.py "
                            "--bs 24 --out '/shared/r1/x y'"));
    QVERIFY2(!text.contains(QStringLiteral("trap")), qPrintable(text));
    QVERIFY2(!text.contains(QStringLiteral("--config")), qPrintable(text));
  }

  // slurm_requeue: the job may be requeued and appends to its outputs; requeued, the worker
  // resumes from the run's newest checkpoint when there is one, else from the first attempt's.
  void requeueWorker() {
    RunSpec s = slurmSpec();
    s.slurm_requeue = true;
    const QString text =
        slurmBatchScript(s, QStringLiteral("/r"), QStringLiteral("/w"), QStringLiteral("/old/run"));
    const QStringList lines = text.split(QLatin1Char('\n'));
    QCOMPARE(lines.mid(4, 3), QStringList({"#SBATCH --output=/r/slurm-%j.out", "#SBATCH --requeue",
                                           "#SBATCH --open-mode=append"}));
    QVERIFY2(!text.contains(QStringLiteral("--no-requeue")), qPrintable(text));
    for (const char* line :
         {"resume=/old/run", "if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then",
          "  for c in /r/checkpoints/step-*.pt; do [ -e \"$c\" ] && resume=/r; done", "fi"})
      QVERIFY2(lines.contains(QLatin1String(line)), line);
    QVERIFY2(text.endsWith(QStringLiteral(
                 "--config /r/spec.json --run-dir /r ${resume:+--resume \"$resume\"}\n")),
             qPrintable(text));
    // A run that began from nothing starts from nothing again before its first checkpoint.
    const QString fresh =
        slurmBatchScript(s, QStringLiteral("/r"), QStringLiteral("/w"), QString());
    QVERIFY2(fresh.split(QLatin1Char('\n')).contains(QStringLiteral("resume=")), qPrintable(fresh));
  }

  // A requeued script run is told as a local restart tells it: the restart count, and the run
  // directory to resume from ({resume} too); the first attempt as before.
  void requeueScript() {
    RunSpec s = slurmSpec();
    s.task = "python";
    s.script = "/home/u/train.py";
    s.script_args = "--from {resume}";
    s.workdir = "/home/u";
    s.slurm_requeue = true;
    const QString text = slurmBatchScript(s, QStringLiteral("/shared/r1"),
                                          QStringLiteral("/opt/dd/bin/ddpdesk-worker"), QString());
    const QStringList lines = text.split(QLatin1Char('\n'));
    const QString srun = QStringLiteral(
        "srun --kill-on-bad-exit=1 --output=/shared/r1/rank-%t.log --chdir=/home/u "
        "/opt/dd/bin/ddpdesk-rank python3 /home/u/train.py --from ");
    const QStringList tail = {"export TORCHELASTIC_MAX_RESTARTS=${limit:-5}",
                              "if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then",
                              "  export TORCHELASTIC_RESTART_COUNT=\"$SLURM_RESTART_COUNT\"",
                              "  export DDPDESK_RESUME=/shared/r1",
                              "  " + srun + "/shared/r1",
                              "else",
                              "  " + srun + "''",
                              "fi",
                              ""};
    QCOMPARE(lines.mid(lines.size() - tail.size()), tail);
    QVERIFY2(lines.contains(QStringLiteral("#SBATCH --requeue")), qPrintable(text));
    QVERIFY2(!lines.contains(QStringLiteral("export DDPDESK_RESUME=")), qPrintable(text));
  }

  void paths() {
    QCOMPARE(slurmScriptPath(QStringLiteral("/r")), QStringLiteral("/r/job.sbatch"));
    QCOMPARE(slurmRankOutputPath(QStringLiteral("/r"), 3), QStringLiteral("/r/rank-3.log"));
    QCOMPARE(slurmStopFilePath(QStringLiteral("/r")), QStringLiteral("/r/stop-requested"));
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestSlurmScript)
#include "test_slurm_script.moc"

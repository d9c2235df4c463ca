#include "slurm/slurm_script.h"

#include <QFileInfo>
#include <QRegularExpression>
#include <QStringList>

#include "local/script_rank.h"
#include "run/run_directory.h"
#include "run/shell_quote.h"

namespace ddpdesk {
namespace {

// A script run's rank command (program empty for the worker's runs).
ScriptRank scriptRankOf(const RunSpec& spec, const QString& runDir, const QString& resume) {
  const TaskInfo* task = find_task(spec.task);
  return task && task->python_script ? scriptRank(spec, runDir, resume) : ScriptRank();
}

}  // namespace

QString slurmScriptPath(const QString& runDir) {
  return runDir + QStringLiteral("/job.sbatch");
}

QString slurmRankOutputPath(const QString& runDir, int rank) {
  return RunDirectory::logPath(runDir, rank);
}

QString slurmStopFilePath(const QString& runDir) {
  return runDir + QStringLiteral("/stop-requested");
}

QString slurmRankTool(const QString& worker) {
  return QFileInfo(worker).absolutePath() + QStringLiteral("/ddpdesk-rank");
}

QString slurmBatchScript(const RunSpec& spec, const QString& runDir, const QString& worker,
                         const QString& resume) {
  QStringList lines;
  lines << QStringLiteral("#!/bin/bash");
  auto sbatch = [&](const QString& option) { lines << QStringLiteral("#SBATCH ") + option; };
  // Job names show in squeue; keep them to characters no tool quotes.
  QString label = QString::fromStdString(spec.name.empty() ? spec.task : spec.name);
  label.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]")), QStringLiteral("_"));
  sbatch(QStringLiteral("--job-name=ddpdesk-") + label);
  sbatch(QStringLiteral("--nodes=%1").arg(spec.slurm_nodes));
  sbatch(QStringLiteral("--ntasks-per-node=%1").arg(spec.slurm_tasks_per_node));
  if (!spec.slurm_partition.empty())
    sbatch(QStringLiteral("--partition=") + QString::fromStdString(spec.slurm_partition));
  if (!spec.slurm_time.empty())
    sbatch(QStringLiteral("--time=") + QString::fromStdString(spec.slurm_time));
  if (!spec.slurm_account.empty())
    sbatch(QStringLiteral("--account=") + QString::fromStdString(spec.slurm_account));
  // #SBATCH lines are not shell words: sbatch splits them at blanks and takes no quotes, so a
  // run directory with a blank would break them (the rank outputs below are quoted for bash).
  sbatch(QStringLiteral("--output=") + runDir + QStringLiteral("/slurm-%j.out"));
  if (spec.slurm_requeue) {
    // Requeued (a node failure, scontrol requeue), the job starts this script again; appending
    // keeps the earlier attempt's batch output and rank logs.
    sbatch(QStringLiteral("--requeue"));
    sbatch(QStringLiteral("--open-mode=append"));
  } else {
    // A job requeued without it would train again from where it began, over its own files: the
    // clusters whose JobRequeue lets jobs requeue by default are told not to.
    sbatch(QStringLiteral("--no-requeue"));
  }
  for (const auto& o : slurm_extra_options(spec.slurm_extra)) sbatch(QString::fromStdString(o));
  lines << QString();
  const ScriptRank script = scriptRankOf(spec, runDir, resume);
  lines << QStringLiteral("# Written by ddpdesk. Each rank's output goes to rank-<N>.log here;");
  lines << (script.program.isEmpty()
                ? QStringLiteral("# the ranks' messages to metrics/rank-<N>.jsonl, which ddpdesk "
                                 "follows.")
                : QStringLiteral("# a rank that imports the ddpdesk client writes its messages "
                                 "to metrics/rank-<N>.jsonl."));
  lines << QStringLiteral(
      "# A stop asked for before the ranks start: they see this file and stop.");
  lines << QStringLiteral("export DDPDESK_STOP_FILE=") + shellQuote(slurmStopFilePath(runDir));
  QStringList cmd = {
      QStringLiteral("srun"), QStringLiteral("--kill-on-bad-exit=1"),
      shellQuote(runDir + QStringLiteral("/rank-%t.log")).prepend(QStringLiteral("--output="))};
  if (script.program.isEmpty()) {
    lines << QStringLiteral(
        "# A stop's SIGTERM is ignored until a rank has loaded and set its own handler: the "
        "file");
    lines << QStringLiteral(
        "# above stops it then (SIG_IGN survives exec; the worker replaces it).");
    // Without this, a stop that lands while a rank is still loading LibTorch kills it (exit
    // 143) instead of stopping it with a checkpoint.
    cmd << QStringLiteral("/bin/sh -c 'trap \"\" TERM INT; exec \"$@\"' ddpdesk-task")
        << shellQuote(worker) << QStringLiteral("--config")
        << shellQuote(RunDirectory::specPath(runDir)) << QStringLiteral("--run-dir")
        << shellQuote(runDir);
    if (spec.slurm_requeue) {
      // A requeued job (SLURM_RESTART_COUNT > 0) resumes from the run's newest checkpoint (what
      // --resume <run_dir> picks), else from where the first attempt began.
      lines << QStringLiteral(
          "# Requeued by Slurm: resume from this run's newest checkpoint when it has one.");
      lines << QStringLiteral("resume=") + (resume.isEmpty() ? QString() : shellQuote(resume));
      lines << QStringLiteral("if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then");
      lines << QStringLiteral(
                   "  for c in %1/checkpoints/step-*.pt; do [ -e \"$c\" ] && resume=%1; done")
                   .arg(shellQuote(runDir));
      lines << QStringLiteral("fi");
      cmd << QStringLiteral("${resume:+--resume \"$resume\"}");
    } else if (!resume.isEmpty()) {
      cmd << QStringLiteral("--resume") << shellQuote(resume);
    }
  } else {
    // The script's signals stay as they are: Python's own, or the client's (a stop's SIGTERM
    // before the client is imported ends the rank, as under torchrun).
    lines << QStringLiteral(
        "# What the script is told (docs/python-scripts.md), and the ddpdesk "
        "client on its path.");
    for (const auto& [name, value] :
         scriptRunVariables(spec, runDir, resume, QFileInfo(runDir).fileName()))
      lines << QStringLiteral("export %1=%2").arg(name, shellQuote(value));
    lines << QStringLiteral("export DDPDESK_DEVICE=") +
                 shellQuote(QString::fromStdString(spec.device));
    lines << QStringLiteral("export PYTHONPATH=%1${PYTHONPATH:+:$PYTHONPATH}")
                 .arg(shellQuote(pythonClientDir(worker)));
    lines << QStringLiteral(
        "# Each task becomes a torchrun rank: ddpdesk-rank sets RANK, WORLD_SIZE, LOCAL_RANK,");
    lines << QStringLiteral(
        "# MASTER_ADDR (the step's first node), MASTER_PORT (from the job id), ... from srun's.");
    const auto scriptCommand = [&](const ScriptRank& r) {
      QStringList c = cmd;
      c << shellQuote(QStringLiteral("--chdir=") + r.workdir) << shellQuote(slurmRankTool(worker))
        << shellQuote(r.program);
      for (const QString& a : r.arguments) c << shellQuote(a);
      return c.join(QLatin1Char(' '));
    };
    if (spec.slurm_requeue) {
      // As a local restart tells it (script_rank.h): the restart count, and the run directory
      // to resume from (the script finds its own checkpoints there, {resume} is it too).
      lines << QStringLiteral(
          "# Requeued by Slurm: the script is told the restart and resumes from this run.");
      lines << QStringLiteral(
          "# Slurm's own limit on requeues (MaxBatchRequeue; 5 unless the cluster sets another).");
      lines << QStringLiteral(
          "limit=$(scontrol show config 2>/dev/null | sed -n 's/^MaxBatchRequeue *= *//p')");
      lines << QStringLiteral("export TORCHELASTIC_MAX_RESTARTS=${limit:-5}");
      lines << QStringLiteral("if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then");
      lines << QStringLiteral("  export TORCHELASTIC_RESTART_COUNT=\"$SLURM_RESTART_COUNT\"");
      lines << QStringLiteral("  export DDPDESK_RESUME=") + shellQuote(runDir);
      lines << QStringLiteral("  ") + scriptCommand(scriptRank(spec, runDir, runDir));
      lines << QStringLiteral("else");
      lines << QStringLiteral("  ") + scriptCommand(script);
      lines << QStringLiteral("fi");
      return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
    }
    lines << scriptCommand(script);
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
  }
  lines << cmd.join(QLatin1Char(' '));
  return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace ddpdesk

// The batch script ddpdesk submits for a run with launcher "slurm": pure text, no I/O.
//   #!/bin/bash
//   #SBATCH --job-name=ddpdesk-<name or task>
//   #SBATCH --nodes=N / --ntasks-per-node=T / [--partition, --time, --account]
//   #SBATCH --output=<run_dir>/slurm-%j.out       (the batch shell's own output)
//   #SBATCH --no-requeue                          (--requeue, --open-mode=append: see below)
//   #SBATCH <each slurm_extra option>
//   export DDPDESK_STOP_FILE=<run_dir>/stop-requested
//   srun --kill-on-bad-exit=1 --output=<run_dir>/rank-%t.log <worker> --config <run_dir>/spec.json
//        --run-dir <run_dir> [--resume X]
// srun's --output with %t gives every rank its own file (stderr follows stdout there when no
// --error is given), so a failed rank's last lines can be shown; --kill-on-bad-exit ends the
// others when one fails instead of leaving them waiting in a collective. DDPDESK_STOP_FILE: a
// rank that starts after ddpdesk asked the job to stop (the file exists) stops at its first step
// boundary, as one that got the stop's SIGTERM does; scancel's signal reaches only ranks already
// running (docs/cluster.md, "Stop, kill, resume").
// A Python-script run (task python) exports what the script is told (scriptRunVariables,
// DDPDESK_DEVICE, the client's folder first on PYTHONPATH) and runs each task as
//   srun ... --chdir=<workdir> <worker's folder>/ddpdesk-rank <python> <script> <args...>
// where ddpdesk-rank (engine/runtime/torchrun_rank.h) sets torchrun's variables from srun's
// and execs the interpreter; no signal is ignored (Python's own, or the client's, take them).
// With spec.slurm_requeue: `#SBATCH --requeue` and `--open-mode=append` (a requeued job runs
// this script again; the earlier attempt's outputs stay), and when SLURM_RESTART_COUNT > 0 the
// ranks resume from the run directory's newest checkpoint if it has one, else from `resume`; a
// script run is then told TORCHELASTIC_RESTART_COUNT=$SLURM_RESTART_COUNT and DDPDESK_RESUME=
// <run_dir> (with {resume} filled so), and TORCHELASTIC_MAX_RESTARTS is Slurm's MaxBatchRequeue.
#pragma once

#include <QString>

#include "run_spec.h"

namespace ddpdesk {

// `spec` as validated; `runDir` and `worker` absolute (every node must see them: a shared file
// system); `resume` empty or what --resume gets.
QString slurmBatchScript(const RunSpec& spec, const QString& runDir, const QString& worker,
                         const QString& resume);
// The ddpdesk-rank beside `worker`, through which a script run's tasks start.
QString slurmRankTool(const QString& worker);
// Where the script and each rank's output go in a run directory.
QString slurmScriptPath(const QString& runDir);                // <runDir>/job.sbatch
QString slurmRankOutputPath(const QString& runDir, int rank);  // <runDir>/rank-N.log
QString slurmStopFilePath(const QString& runDir);              // <runDir>/stop-requested

}  // namespace ddpdesk

// "Copy launch command": the command lines that run a RunSpec on a cluster with ddpdesk-worker
// instead of through the GUI. Pure functions of the spec, so they are unit-tested.
#pragma once

#include <QString>
#include <QStringList>

#include "run/shell_quote.h"  // shellQuote(), which the commands use
#include "run/worker_arguments.h"
#include "run_spec.h"

namespace ddpdesk {

// workerArguments(spec) (worker_arguments.h), each word quoted for a shell where it needs it.
QStringList quotedWorkerArguments(const RunSpec& spec);

// `torchrun --no-python --nnodes 1 --nproc-per-node N <worker> --task ... --batch-size ...`
QString torchrunCommand(const RunSpec& spec,
                        const QString& worker = QStringLiteral("ddpdesk-worker"));

// `srun --nodes 1 --ntasks N [--gres=gpu:N] <worker> ...`
// The worker derives MASTER_ADDR/MASTER_PORT from the allocation (see rank_env.h). Every
// task sees all N GPUs (--gres, not --gpus-per-task) because the worker picks its device from
// SLURM_LOCALID.
QString srunCommand(const RunSpec& spec, const QString& worker = QStringLiteral("ddpdesk-worker"));

}  // namespace ddpdesk

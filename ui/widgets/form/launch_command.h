// "Copy launch command": the command lines that run a RunSpec on a cluster with ddpdesk-worker
// (or, for task python, the user's script) instead of through the GUI. Pure functions of the
// spec, so they are unit-tested.
#pragma once

#include <QString>
#include <QStringList>

#include "run/shell_quote.h"  // shellQuote(), which the commands use
#include "run/worker_arguments.h"
#include "run_spec.h"

namespace ddpdesk {

// workerArguments(spec) (worker_arguments.h), each word quoted for a shell where it needs it.
QStringList quotedWorkerArguments(const RunSpec& spec);

// `torchrun --no_python --nnodes 1 --nproc_per_node N <worker> --task ... --batch-size ...`. The
// nodes and ranks per node are a Slurm spec's slurm_nodes and slurm_tasks_per_node (else one node
// of nproc); with more than one node the line adds `--node_rank "$NODE_RANK" --master_addr
// "$MASTER_ADDR"`, to be run on every node with those two set. Task python: `torchrun --nnodes 1
// --nproc_per_node N script.py args` (the placeholders filled), as a script is run without ddpdesk.
QString torchrunCommand(const RunSpec& spec,
                        const QString& worker = QStringLiteral("ddpdesk-worker"));

// `srun --nodes M --ntasks M*N [--ntasks-per-node N] [--gres=gpu:N] <worker> ...` (the same nodes
// and ranks per node as torchrunCommand). The worker derives MASTER_ADDR/MASTER_PORT from the
// allocation (see rank_env.h). Every task sees its node's N GPUs (--gres, not --gpus-per-task)
// because the worker picks its device from SLURM_LOCALID. Task python: one torchrun per node
// (`srun --nodes M --ntasks M --ntasks-per-node 1 torchrun ... --rdzv_endpoint
// "$MASTER_ADDR:29500" script.py args`), since a torchrun-style script reads torchrun's variables.
QString srunCommand(const RunSpec& spec, const QString& worker = QStringLiteral("ddpdesk-worker"));

}  // namespace ddpdesk

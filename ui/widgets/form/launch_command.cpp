// "Copy launch command": torchrun and srun lines for a RunSpec (launch_command.h).
#include "form/launch_command.h"

#include <QRegularExpression>

namespace ddpdesk {

// The worker's words, each quoted for a shell where it needs it.
QStringList quotedWorkerArguments(const RunSpec& spec) {
  QStringList args = workerArguments(spec);
  for (QString& a : args) a = shellQuote(a);
  return args;
}

namespace {

// Nodes and ranks per node: a Slurm spec's job shape, else one node of nproc ranks.
struct Shape {
  int nodes;
  int perNode;
};

Shape shapeOf(const RunSpec& spec) {
  if (spec.is_slurm()) return {spec.slurm_nodes, spec.slurm_tasks_per_node};
  return {1, spec.nproc};
}

}  // namespace

// torchrun's flags with underscores, as Debian's torchrun (1.13) takes them and as
// test_torchrun drives it; later torchruns take them too.
QString torchrunCommand(const RunSpec& spec, const QString& worker) {
  const Shape shape = shapeOf(spec);
  QStringList words = {QStringLiteral("torchrun"), QStringLiteral("--no_python"),
                       QStringLiteral("--nnodes"), QString::number(shape.nodes)};
  // Run on every node: each sets NODE_RANK (0 to nodes-1) and MASTER_ADDR (node 0's host).
  if (shape.nodes > 1)
    words << QStringLiteral("--node_rank") << QStringLiteral("\"$NODE_RANK\"")
          << QStringLiteral("--master_addr") << QStringLiteral("\"$MASTER_ADDR\"");
  words << QStringLiteral("--nproc_per_node") << QString::number(shape.perNode)
        << shellQuote(worker);
  return (words + quotedWorkerArguments(spec)).join(QLatin1Char(' '));
}

// No MASTER_ADDR/PORT: the worker takes them from the allocation (first node of the step's node
// list, a port from the job id), and a fixed 127.0.0.1 would be wrong on any other node.
QString srunCommand(const RunSpec& spec, const QString& worker) {
  const Shape shape = shapeOf(spec);
  QStringList words = {QStringLiteral("srun"), QStringLiteral("--nodes"),
                       QString::number(shape.nodes), QStringLiteral("--ntasks"),
                       QString::number(shape.nodes * shape.perNode)};
  if (shape.nodes > 1)
    words << QStringLiteral("--ntasks-per-node") << QString::number(shape.perNode);
  if (spec.device == "cuda") words << QStringLiteral("--gres=gpu:%1").arg(shape.perNode);
  words << shellQuote(worker);
  return (words + quotedWorkerArguments(spec)).join(QLatin1Char(' '));
}

}  // namespace ddpdesk

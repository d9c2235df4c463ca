// "Copy launch command": torchrun and srun lines for a RunSpec (launch_command.h).
#include "form/launch_command.h"

#include <QRegularExpression>

#include "local/script_rank.h"

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

bool isScript(const RunSpec& spec) {
  const TaskInfo* task = find_task(spec.task);
  return task && task->python_script;
}

// A script run's `script.py args...`, the placeholders filled as a run would fill them ({run_dir}
// with the spec's run directory, "." when it has none).
QStringList quotedScriptWords(const RunSpec& spec) {
  const ScriptRank r = scriptRank(
      spec, spec.run_dir.empty() ? QStringLiteral(".") : QString::fromStdString(spec.run_dir),
      QString::fromStdString(spec.resume));
  QStringList words;
  for (const QString& a : r.arguments) words << shellQuote(a);
  return words;
}

}  // namespace

// torchrun's flags with underscores, as Debian's torchrun (1.13) takes them and as
// test_torchrun drives it; later torchruns take them too. `--redirects 2 --tee 2`: Debian's
// torchrun fails at start on Python 3.11 without them (each rank's stderr also goes to a log
// file of torchrun's, and still to the terminal); harmless elsewhere.
const QStringList kTorchrunOutput = {QStringLiteral("--redirects"), QStringLiteral("2"),
                                     QStringLiteral("--tee"), QStringLiteral("2")};

QString torchrunCommand(const RunSpec& spec, const QString& worker) {
  const Shape shape = shapeOf(spec);
  const bool script = isScript(spec);
  QStringList words = {QStringLiteral("torchrun")};
  words << kTorchrunOutput;
  if (!script) words << QStringLiteral("--no_python");
  words << QStringLiteral("--nnodes") << QString::number(shape.nodes);
  // Run on every node: each sets NODE_RANK (0 to nodes-1) and MASTER_ADDR (node 0's host).
  if (shape.nodes > 1)
    words << QStringLiteral("--node_rank") << QStringLiteral("\"$NODE_RANK\"")
          << QStringLiteral("--master_addr") << QStringLiteral("\"$MASTER_ADDR\"");
  words << QStringLiteral("--nproc_per_node") << QString::number(shape.perNode);
  if (script) return (words + quotedScriptWords(spec)).join(QLatin1Char(' '));
  words << shellQuote(worker);
  return (words + quotedWorkerArguments(spec)).join(QLatin1Char(' '));
}

// No MASTER_ADDR/PORT: the worker takes them from the allocation (first node of the step's node
// list, a port from the job id), and a fixed 127.0.0.1 would be wrong on any other node.
QString srunCommand(const RunSpec& spec, const QString& worker) {
  const Shape shape = shapeOf(spec);
  const bool script = isScript(spec);
  // A torchrun-style script reads torchrun's variables, which srun does not set: one torchrun
  // per node, meeting at the first node's host (MASTER_ADDR, set before srun).
  const int tasks = script ? shape.nodes : shape.nodes * shape.perNode;
  QStringList words = {QStringLiteral("srun"), QStringLiteral("--nodes"),
                       QString::number(shape.nodes), QStringLiteral("--ntasks"),
                       QString::number(tasks)};
  if (shape.nodes > 1)
    words << QStringLiteral("--ntasks-per-node") << QString::number(script ? 1 : shape.perNode);
  if (spec.device == "cuda") words << QStringLiteral("--gres=gpu:%1").arg(shape.perNode);
  if (script) {
    words << QStringLiteral("torchrun") << kTorchrunOutput << QStringLiteral("--nnodes")
          << QString::number(shape.nodes) << QStringLiteral("--nproc_per_node")
          << QString::number(shape.perNode) << QStringLiteral("--rdzv_backend")
          << QStringLiteral("c10d") << QStringLiteral("--rdzv_endpoint")
          << QStringLiteral("\"$MASTER_ADDR:29500\"");
    return (words + quotedScriptWords(spec)).join(QLatin1Char(' '));
  }
  words << shellQuote(worker);
  return (words + quotedWorkerArguments(spec)).join(QLatin1Char(' '));
}

}  // namespace ddpdesk

#include "form/launch_command.h"

#include <QRegularExpression>

namespace ddpdesk {

// The worker's words, each quoted for a shell where it needs it.
QStringList quotedWorkerArguments(const RunSpec& spec) {
  QStringList args = workerArguments(spec);
  for (QString& a : args) a = shellQuote(a);
  return args;
}

QString torchrunCommand(const RunSpec& spec, const QString& worker) {
  QStringList words = {
      QStringLiteral("torchrun"), QStringLiteral("--no-python"),      QStringLiteral("--nnodes"),
      QStringLiteral("1"),        QStringLiteral("--nproc-per-node"), QString::number(spec.nproc),
      shellQuote(worker)};
  return (words + quotedWorkerArguments(spec)).join(QLatin1Char(' '));
}

// No MASTER_ADDR/PORT: the worker takes them from the allocation (first node of the step's node
// list, a port from the job id), and a fixed 127.0.0.1 would be wrong on any other node.
QString srunCommand(const RunSpec& spec, const QString& worker) {
  QStringList words = {QStringLiteral("srun"), QStringLiteral("--nodes"), QStringLiteral("1"),
                       QStringLiteral("--ntasks"), QString::number(spec.nproc)};
  if (spec.device == "cuda") words << QStringLiteral("--gres=gpu:%1").arg(spec.nproc);
  words << shellQuote(worker);
  return (words + quotedWorkerArguments(spec)).join(QLatin1Char(' '));
}

}  // namespace ddpdesk

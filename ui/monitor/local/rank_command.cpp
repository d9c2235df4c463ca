// The command a local run's ranks run (rank_command.h).
#include "local/rank_command.h"

#include "local/local_rank_launcher.h"

namespace ddpdesk {

QString RankCommand::text() const {
  return (QStringList{program} + arguments).join(QLatin1Char(' '));
}

RankCommand rankCommandFor(const RunSpec& spec, const QString& program) {
  RankCommand c;
  c.program = program;
  c.arguments = LocalRankLauncher::workerArguments(QString::fromStdString(spec.run_dir),
                                                   QString::fromStdString(spec.resume));
  c.stopSignals = RankProcess::StopSignals::Blocked;
  return c;
}

}  // namespace ddpdesk

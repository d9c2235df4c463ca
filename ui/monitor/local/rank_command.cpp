// The command a local run's ranks run (rank_command.h).
#include "local/rank_command.h"

#include <QDir>
#include <QFileInfo>

#include "local/local_rank_launcher.h"
#include "local/script_rank.h"

namespace ddpdesk {

QString RankCommand::text() const {
  return (QStringList{program} + arguments).join(QLatin1Char(' '));
}

RankCommand rankCommandFor(const RunSpec& spec, const QString& program, int rank, int world,
                           const QProcessEnvironment& inherited) {
  RankCommand c;
  const QString runDir = QString::fromStdString(spec.run_dir);
  const QString resume = QString::fromStdString(spec.resume);
  if (const TaskInfo* task = find_task(spec.task); task && task->python_script) {
    const ScriptRank s = scriptRank(spec, runDir, resume);
    c.error = s.error;
    c.program = s.program;
    c.arguments = s.arguments;
    c.workdir = s.workdir;
    c.environment =
        scriptEnvironment(spec, rank, world, runDir, resume, QFileInfo(runDir).fileName(),
                          pythonClientDir(program), inherited);
    return c;
  }
  c.program = program;
  c.arguments = LocalRankLauncher::workerArguments(QString::fromStdString(spec.run_dir),
                                                   QString::fromStdString(spec.resume));
  c.stopSignals = RankProcess::StopSignals::Blocked;
  return c;
}

}  // namespace ddpdesk

// planRestart (restart_policy.h): whether, and when, a failed run restarts from its checkpoint.
#include "run/restart_policy.h"

#include <algorithm>
#include <cmath>

#include "exit_record.h"

namespace ddpdesk {

RestartPlan planRestart(const RunSpec& spec, int done, const RunController::Failure& failure,
                        bool trained, bool stopRequested) {
  RestartPlan plan;
  if (spec.max_restarts <= 0 || stopRequested) return plan;
  const TaskInfo* task = find_task(spec.task);
  if (failure.rejected) {
    plan.note = QStringLiteral("no restart: the job was refused");
  } else if (failure.exitCode == kExitBadInput && failure.signal == 0) {
    // The worker's bad input, and argparse's usage error alike: refused again.
    plan.note = QStringLiteral("no restart: rank %1 refused its input (exit 2)").arg(failure.rank);
  } else if (failure.exitCode == kExitOutOfMemory && failure.signal == 0 && !spec.fit_batch &&
             !(task && task->python_script)) {
    // A worker's exit 3: the same micro-batch would run out again. With --fit-batch the restart
    // fits a smaller one. (A script's exit 3 means what the script says.)
    plan.note = QStringLiteral(
                    "no restart: rank %1 ran out of memory and would again at this micro-batch "
                    "(--fit-batch fits one)")
                    .arg(failure.rank);
  } else if (!trained) {
    plan.note = QStringLiteral("no restart: the run failed before its first optimizer step");
  } else if (done >= spec.max_restarts) {
    plan.note = done == 1 ? QStringLiteral("after 1 restart, none left")
                          : QStringLiteral("after %1 restarts, none left").arg(done);
  } else {
    plan.restart = true;
    plan.attempt = done + 1;
    const double ms = spec.restart_backoff * 1000.0 * std::pow(2.0, done);
    plan.delayMs = int(std::min<double>(ms, kMaxRestartDelayMs));
  }
  return plan;
}

QString restartLine(int attempt, int maxRestarts, int delayMs, qint64 step, const QString& cause) {
  if (maxRestarts <= 0)  // Slurm requeued the job: its limit and its timing are Slurm's
    return QStringLiteral("restart %1 after step %2: %3").arg(attempt).arg(step).arg(cause);
  return QStringLiteral("restart %1 of %2 in %3 s after step %4: %5")
      .arg(attempt)
      .arg(maxRestarts)
      .arg(delayMs / 1000.0)
      .arg(step)
      .arg(cause);
}

}  // namespace ddpdesk

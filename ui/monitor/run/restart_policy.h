// When a failed run restarts by itself (spec max_restarts, docs/recovery.md): the rules in one
// place, for the backend that restarts (local/local_backend.h). A run restarts when a rank
// failed after training started and restarts are left; never for a user's stop, for input a
// rank refused (exit 2: the worker's bad input, argparse's usage error), for a worker that ran
// out of memory (exit 3) unless --fit-batch fits a smaller micro-batch at the restart, for a
// failure before the first optimizer step, or for a job Slurm refused.
#pragma once

#include <QString>

#include "run/run_controller.h"
#include "run_spec.h"

namespace ddpdesk {

struct RestartPlan {
  bool restart = false;
  int attempt = 0;  // 1 for the first restart
  int delayMs = 0;  // the backoff before it: restart_backoff doubled per earlier restart
  // Why not, said after the failure's own line when restarts were asked for: "no restart: the
  // run failed before its first optimizer step", "after 2 restarts, none left"; empty otherwise.
  QString note;
};

// `done`: restarts of this run so far; `trained`: a rank reported an optimizer step.
RestartPlan planRestart(const RunSpec& spec, int done, const RunController::Failure& failure,
                        bool trained, bool stopRequested);

// "restart 1 of 3 in 2 s after step 120: <cause>": monitor.log's line, headless's, the window's.
// maxRestarts 0 (a Slurm job requeued, its limit Slurm's): "restart 1 after step 120: <cause>".
QString restartLine(int attempt, int maxRestarts, int delayMs, qint64 step, const QString& cause);

// Restart delays grow no longer than this.
constexpr int kMaxRestartDelayMs = 300000;

}  // namespace ddpdesk

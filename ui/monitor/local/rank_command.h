// RankCommand: what each rank of a local run runs, built from the run's spec in one place
// (rankCommandFor): the program, its arguments, the environment that kind of program needs on
// top of every rank's (LocalRankLauncher::rankEnvironment: torchrun's variables, DDPDESK_MONITOR,
// DDPDESK_TOKEN), its working directory, and how it takes the stop signals: ddpdesk-worker, or for
// task python the user's script under Python (script_rank.h).
#pragma once

#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

#include "local/rank_process.h"
#include "run_spec.h"

namespace ddpdesk {

struct RankCommand {
  QString program;
  QStringList arguments;
  QProcessEnvironment environment;  // added after the launcher's own; empty: nothing more
  QString workdir;                  // empty: the monitor's
  RankProcess::StopSignals stopSignals = RankProcess::StopSignals::AsTheyAre;

  QString error;  // one line: what keeps this command from being built (nothing to start)

  // "program arg arg", for monitor.log.
  QString text() const;
};

// The command rank `rank` of `world` runs (spec.run_dir is the run's directory, spec.resume what
// it continues from). The worker `program`: `<program> --config <rundir>/spec.json --run-dir
// <rundir> [--resume X]`, with SIGINT/SIGTERM blocked until the worker's stop-signal thread takes
// them. Task python: the script's command (scriptRank), its environment (scriptEnvironment, the
// client's folder beside the worker's: <worker's folder>/../share/ddpdesk/python), the signals
// as they are (Python's own, or the client's thread); error() set when its arguments cannot be
// split. `inherited`: the environment the ranks get besides (its PYTHONPATH is kept).
RankCommand rankCommandFor(const RunSpec& spec, const QString& program, int rank, int world,
                           const QProcessEnvironment& inherited = QProcessEnvironment());

}  // namespace ddpdesk

// RankCommand: what each rank of a local run runs, built from the run's spec in one place
// (rankCommandFor): the program, its arguments, the environment that kind of program needs on
// top of every rank's (LocalRankLauncher::rankEnvironment: torchrun's variables, DDPDESK_MONITOR,
// DDPDESK_TOKEN), and how it takes the stop signals. Today every rank is ddpdesk-worker; another
// kind of rank program is another branch of rankCommandFor().
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
  RankProcess::StopSignals stopSignals = RankProcess::StopSignals::AsTheyAre;

  // "program arg arg", for monitor.log.
  QString text() const;
};

// The command every rank of `spec` runs (spec.run_dir is the run's directory, spec.resume what
// it continues from): `<program> --config <rundir>/spec.json --run-dir <rundir> [--resume X]`,
// with SIGINT/SIGTERM blocked until the worker's stop-signal thread takes them.
RankCommand rankCommandFor(const RunSpec& spec, const QString& program);

}  // namespace ddpdesk

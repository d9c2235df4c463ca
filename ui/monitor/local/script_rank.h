// How a rank of a Python-script run (task "python") is started: the interpreter, the script and
// its arguments with the spec's placeholders filled in, the working directory, and what its
// environment adds to torchrun's variables (LocalRankLauncher::rankEnvironment sets RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; this adds the rest of what
// torchrun sets, the spec's values as DDPDESK_* and the client's folder on PYTHONPATH), so an
// unmodified torchrun script runs. Pure: no process is started here.
#pragma once

#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <utility>
#include <vector>

#include "run_spec.h"

namespace ddpdesk {

struct ScriptRank {
  QString program;        // spec.python, or python3 (found on PATH when the rank starts)
  QStringList arguments;  // the script, then its arguments
  QString workdir;        // spec.workdir, or the run directory
  QString error;          // one line when script_args cannot be split; the rest is then empty
};

// The script, an interpreter named by a path and the working directory as absolute paths, read
// against the monitor's working directory: the ranks start elsewhere (the run directory), and a
// resume may come from anywhere.
void makeScriptPathsAbsolute(RunSpec& spec);

// Splits `text` into words as a POSIX shell would for plain words, '...' and "..." (with \" and
// \\ inside) and backslash escapes; no variables, globs or substitutions. *error (one line) on
// an unclosed quote.
QStringList splitShellWords(const QString& text, QString* error);

// The command of every rank of `spec` (the same for each: ranks tell themselves apart by RANK)
// for a run in `runDir`, continuing from `resume` when not empty. Placeholders are filled word
// by word after splitting, so a run directory with blanks stays one word. An unknown
// placeholder is the spec's error (validate()), caught before this.
ScriptRank scriptRank(const RunSpec& spec, const QString& runDir, const QString& resume);

// What every rank of a script run is told, whoever starts it (here, or srun through a batch
// script): TORCHELASTIC_RUN_ID (`runId`), TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS;
// DDPDESK_BATCH_SIZE, DDPDESK_ACCUM_STEPS, DDPDESK_EPOCHS, DDPDESK_LR, DDPDESK_SEED,
// DDPDESK_PRECISION, DDPDESK_RUN_DIR, DDPDESK_RESUME (set only when resuming); PYTHONUNBUFFERED=1
// so the script's prints reach the log and the charts as they are made. In that order.
std::vector<std::pair<QString, QString>> scriptRunVariables(const RunSpec& spec,
                                                            const QString& runDir,
                                                            const QString& resume,
                                                            const QString& runId);

// What rank `rank` of `world` adds to the environment LocalRankLauncher gives every rank:
// GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, scriptRunVariables, and
// PYTHONPATH with `clientDir` (the folder holding the `ddpdesk` package) first. `inherited` is
// the environment the rank would otherwise get (its PYTHONPATH is kept after the client's
// folder).
QProcessEnvironment scriptEnvironment(const RunSpec& spec, int rank, int world,
                                      const QString& runDir, const QString& resume,
                                      const QString& runId, const QString& clientDir,
                                      const QProcessEnvironment& inherited);

// Where the Python client is for ranks started with the worker `program`:
// <program's folder>/../share/ddpdesk/python (the build tree and an install lay it out so).
QString pythonClientDir(const QString& program);

}  // namespace ddpdesk

// Bad input in what a spec asks of this machine's files and environment, found before any rank
// is spawned or anything written, so that it is one line and exit 2 instead of a run directory,
// a failed history entry and a rank's exit code:
// - the DDPDESK_* environment the ranks would get, by the worker's own rules (worker_settings.h);
// - a Fashion-MNIST task's files, where the ranks would read them (fmnist_files.h);
// - a run directory that already holds another run (its spec.json): a new run there would mix
//   its record, metrics and checkpoints into the old one's; resuming that run is the way on;
// - a run directory that cannot be made or written (a file in the way, a read-only file system,
//   a name too long: RunDirectory::unusableReason);
// - a resume that changes the run's plan: its world size, batch, accumulation or data set (the
//   checkpoint's epoch and step within it would mean other samples and other step totals);
// - a metrics file whose directory does not exist or cannot be written;
// - a Python-script run's script (missing, unreadable), interpreter (not on PATH, not
//   executable), working directory (missing) or arguments (an unclosed quote).
// What only the worker can judge (a resume's checkpoint, a user task's files) is its dry run's
// (task_check.h). Qt Core only.
#pragma once

#include <QProcessEnvironment>
#include <QString>

#include "run_spec.h"

namespace ddpdesk {

// The first problem, one line with the field as a flag ("invalid --run-dir '...': ..."); empty
// when there is none. `rankEnvironment` is what the ranks inherit.
QString localStartProblem(const RunSpec& spec, const QProcessEnvironment& rankEnvironment);

}  // namespace ddpdesk

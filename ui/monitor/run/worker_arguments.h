// The one mapping from a RunSpec to ddpdesk-worker's flags. The launch commands of the GUI
// ("Copy launch command") quote these words for a shell; the task check passes them to QProcess
// as they are.
#pragma once

#include <QStringList>

#include "run_spec.h"

namespace ddpdesk {

// The worker's flags for this spec, one word per list item and unquoted: the core fields always
// (so a command line reads on its own), any other field only when it differs from the default.
// No --nproc (the launcher sets the world), no --on-end (the monitor's), and no user-task fields
// for a task without user files.
QStringList workerArguments(const RunSpec& spec);

}  // namespace ddpdesk

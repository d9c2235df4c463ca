// What the ranks' own exit records (rank-N.exit.json, written by ddpdesk-worker) say about a run
// whose monitor did not live to write status.json: the monitor was killed, the ranks got their
// parent-death signal, stopped together and checkpointed. The history shows that instead of
// "active / interrupted", and the run can be resumed from the checkpoint the records name.
#pragma once

#include <QString>
#include <optional>

#include "run/run_directory.h"

namespace ddpdesk {

// A RunStatus built from the exit records in `dir` for a run of `world` ranks, or nullopt when no
// record says the monitor died (the run is still active, ran without a monitor, or its monitor
// is about to write status.json itself). A rank without a record was killed outright.
std::optional<RunStatus> statusFromExitRecords(const QString& dir, int world);

}  // namespace ddpdesk

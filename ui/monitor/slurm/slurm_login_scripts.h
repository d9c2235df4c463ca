// The shell scripts that prepare and undo a Slurm run directory on a login node over ssh (run
// with `sh -c SCRIPT NAME ARGS...` by a ClusterCommand whose remote is the login node). Plain
// POSIX sh and coreutils, nothing of ddpdesk installed there.
//
//   resolve DIR            checks that sbatch is on the login node's PATH and prints DIR as an
//                          absolute path ("~/x" and relative paths from the home directory).
//                          Writes nothing. Exit 127 with one line when sbatch is missing.
//   write DIR STAMP SPEC   creates DIR (when missing), removes an earlier job's stop file, moves
//                          an earlier job's metrics/ aside to metrics-before-STAMP and its
//                          rank-N.log to logs-before-STAMP/ (they would be read again as the new
//                          job's: slurm_run_files.h), writes SPEC to spec.json and stdin to
//                          job.sbatch, each through a temporary file and a rename; prints
//                          "<created 0|1> <metrics aside or -> <logs aside or ->". A failure
//                          removes what it made.
//   undo DIR CREATED ASIDE LOGS
//                          after a refused submission: removes DIR when it was created, else
//                          job.sbatch, and moves what was set aside back.
//   stop DIR               creates DIR/stop-requested (the batch script's DDPDESK_STOP_FILE):
//                          ranks that start after a stop was asked for find it and stop.
//   read-spec DIR          prints DIR made absolute, then DIR/spec.json (resuming a run from its
//                          directory on the cluster); exit 3 or 4 with one line when DIR or its
//                          spec.json is missing.
#pragma once

#include <QString>
#include <QStringList>

namespace ddpdesk {

QStringList remoteResolveCommand(const QString& dir);
QStringList remoteWriteCommand(const QString& dir, const QString& stamp, const QString& spec);
QStringList remoteUndoCommand(const QString& dir, bool created, const QString& aside,
                              const QString& logs);
QStringList remoteStopCommand(const QString& dir);
QStringList remoteReadSpecCommand(const QString& dir);

}  // namespace ddpdesk

// The small POSIX sh loop that ddpdesk runs on the remote host (through one long-lived ssh) to
// follow a run directory there. It needs only sh, coreutils (stat, head, tail, base64, cksum,
// sleep, uname), awk and kill/ps; it writes nothing and listens on nothing, and it ends by itself
// when ssh goes (its next write fails). Arguments: the run directory, the poll interval (s), and
// for a reconnection what the mirror holds of each rank file (RemoteRecordMirror::resumeState()).
//
// What it prints, one record per line (RemoteRecordMirror reads it):
//   S <base64>                spec.json as it was at the start, when there is one
//   H 1 <host>                the directory exists (and S, if any, came); <host>: `uname -n`
//   A <rank> <pid> <0|1>      the pid of the last hello sent for rank-N.jsonl is alive (checked
//                             before the file is read, so a gone rank's last lines come in the
//                             same poll)
//   R <key> <why> <inode>     the file is read again from its start: new, replaced (inode),
//                             truncated (shorter than read) or rewritten (first bytes changed)
//   D <key> <offset> <b64>    bytes of the file from <offset> (at most 4 MiB per poll)
// <key>: N for metrics/rank-N.jsonl, LN for rank N's output file rank-N.log, M for
// metrics/system.jsonl (the system metrics a script run's monitor sampled).
//   U <base64>                status.json, at the start of the first poll that finds it and
//                             of each that finds it changed (how the run's monitor says the
//                             run ended: a script run without the client has no other word)
//   T                         end of one poll
// A missing directory: "no such directory: <dir>" on stderr, exit status 3.
#pragma once

#include <QString>

namespace ddpdesk {

QString remoteFollowScript();
constexpr int kRemoteMissingDirExit = 3;

}  // namespace ddpdesk

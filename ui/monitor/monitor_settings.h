// MonitorSettings: the environment variables that change how the monitor behaves, read in this
// one place (documented in docs/cluster.md and README.md), so tests and people find them all.
//   DDPDESK_WORKER       the ddpdesk-worker to start (default: the one beside ddpdesk)
//   DDPDESK_SSH_COMMAND  the ssh client and its options, split like a shell word list
//                        (default "ssh" from PATH; e.g. "ssh -F /path/to/config")
//   DDPDESK_SSH_RECONNECT_S  how long a follow over ssh tries to get a lost connection back
//                        before it ends as Failed (default 120; 0: it does not try)
//   DDPDESK_SILENT_S     a followed rank whose metrics file gives no line for this long is
//                        shown "silent for N s" and the run stalled (default 120; 0: never)
//   DDPDESK_REMOTE_WORKER  the ddpdesk-worker on a cluster reached through a login node
//                        (slurm_login; default: the local worker's absolute path)
#pragma once

#include <QString>
#include <QStringList>

namespace ddpdesk::settings {

// The worker program named by DDPDESK_WORKER; empty when unset.
QString workerProgram();
// The worker program named by DDPDESK_REMOTE_WORKER; empty when unset.
QString remoteWorkerProgram();
// The ssh command line: program first, then its own options. Never empty.
QStringList sshCommand();
// DDPDESK_SSH_RECONNECT_S in seconds; the default when unset or not a whole number >= 0.
int sshReconnectSeconds();
// DDPDESK_SILENT_S in seconds; the default when unset or not a whole number >= 0.
int silentRankSeconds();

}  // namespace ddpdesk::settings

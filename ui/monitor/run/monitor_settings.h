// MonitorSettings: every DDPDESK_* environment switch the monitor side reads (the window,
// headless, compare, queue), in one struct, parsed once. `ddpdesk` reads them when it starts
// (app/ddpdesk_main.cpp): a malformed value is one line naming the variable and exit code 2,
// before anything starts. Documented in docs/environment.md ("The monitor's switches"); the
// worker's own are WorkerSettings (engine/runtime/worker_settings.h).
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <functional>

namespace ddpdesk {

struct MonitorSettings {
  // DDPDESK_WORKER: the ddpdesk-worker to start; empty: the one beside ddpdesk.
  QString worker;
  // DDPDESK_REMOTE_WORKER: the ddpdesk-worker on a cluster reached through a login node;
  // empty: the local worker's absolute path.
  QString remoteWorker;
  // DDPDESK_SSH_COMMAND: the ssh client and its own options, split at spaces (double quotes keep
  // a word with spaces whole; e.g. "ssh -F /path/to/config"). Never empty: "ssh" from PATH.
  QStringList sshCommand{QStringLiteral("ssh")};
  // DDPDESK_SSH_RECONNECT_S: how long a follow over ssh tries to get a lost connection back
  // before it ends as Failed (0: it does not try).
  int sshReconnectSeconds = 120;
  // DDPDESK_SILENT_S: a followed rank whose metrics file gives no line for this long is shown
  // "silent for N s" and the run stalled (0: never).
  int silentRankSeconds = 120;
  // DDPDESK_ON_END_TIMEOUT_S: a spec's on_end command still running after this long is killed
  // (and headless waits for it this long before it exits).
  int onEndTimeoutSeconds = 30;
  // DDPDESK_AUTOSTART=1: the window starts its run at once, as --start does.
  bool autostart = false;
};

struct MonitorSettingsResult {
  MonitorSettings settings;
  QString error;  // one line naming the variable, its value and what is allowed
  bool ok() const { return error.isEmpty(); }
};

// The value of an environment variable; empty when unset.
using MonitorEnvLookup = std::function<QByteArray(const char*)>;

MonitorSettingsResult readMonitorSettings(const MonitorEnvLookup& lookup);
MonitorSettingsResult readMonitorSettings();  // from the process environment

// The settings this process runs with: those installed by setMonitorSettings (ddpdesk's main
// does, after checking them), else read from the environment on first use, once (malformed
// values then keep their defaults: only the front end reports them).
const MonitorSettings& monitorSettings();
void setMonitorSettings(const MonitorSettings& s);

}  // namespace ddpdesk

#include "run/monitor_settings.h"

#include <QProcess>
#include <QtGlobal>
#include <optional>

namespace ddpdesk {

namespace {

// "DDPDESK_SILENT_S='abc': must be a whole number of seconds >= 0".
QString invalid(const char* name, const QByteArray& value, const char* allowed) {
  return QStringLiteral("invalid %1='%2': must be %3")
      .arg(QLatin1String(name), QString::fromUtf8(value), QLatin1String(allowed));
}

// Whole seconds from `min` (0 or 1) to a day (larger values are typing mistakes, and their
// milliseconds would overflow the int timers take); a malformed
// value leaves `out` as it was and sets `error` unless an earlier variable already did.
void readSeconds(const MonitorEnvLookup& get, const char* name, int& out, QString& error,
                 int min = 0) {
  const QByteArray v = get(name).trimmed();
  if (v.isEmpty()) return;
  bool ok = false;
  const int s = v.toInt(&ok);
  if (ok && s >= min && s <= 86400) {
    out = s;
  } else if (error.isEmpty()) {
    error = invalid(name, get(name),
                    min == 0 ? "a whole number of seconds from 0 to 86400"
                             : "a whole number of seconds from 1 to 86400");
  }
}

std::optional<MonitorSettings>& installed() {
  static std::optional<MonitorSettings> s;
  return s;
}

}  // namespace

MonitorSettingsResult readMonitorSettings(const MonitorEnvLookup& get) {
  MonitorSettingsResult r;
  MonitorSettings& s = r.settings;
  s.worker = QString::fromLocal8Bit(get("DDPDESK_WORKER"));
  s.remoteWorker = QString::fromLocal8Bit(get("DDPDESK_REMOTE_WORKER"));
  const QByteArray ssh = get("DDPDESK_SSH_COMMAND");
  if (!ssh.trimmed().isEmpty()) s.sshCommand = QProcess::splitCommand(QString::fromLocal8Bit(ssh));
  if (s.sshCommand.isEmpty()) s.sshCommand = QStringList{QStringLiteral("ssh")};
  // Every variable is read even after a malformed one, which keeps its default: the error names
  // the first, and a reader that does not stop on it still has the others.
  readSeconds(get, "DDPDESK_SSH_RECONNECT_S", s.sshReconnectSeconds, r.error);
  readSeconds(get, "DDPDESK_SILENT_S", s.silentRankSeconds, r.error);
  readSeconds(get, "DDPDESK_ON_END_TIMEOUT_S", s.onEndTimeoutSeconds, r.error, 1);
  const QByteArray autostart = get("DDPDESK_AUTOSTART");
  if (autostart == "1") {
    s.autostart = true;
  } else if (!autostart.isEmpty() && autostart != "0" && r.error.isEmpty()) {
    r.error = invalid("DDPDESK_AUTOSTART", autostart, "0 or 1");
  }
  return r;
}

MonitorSettingsResult readMonitorSettings() {
  return readMonitorSettings([](const char* name) { return qgetenv(name); });
}

const MonitorSettings& monitorSettings() {
  std::optional<MonitorSettings>& s = installed();
  if (!s) {
    s = readMonitorSettings().settings;
  }
  return *s;
}

void setMonitorSettings(const MonitorSettings& s) {
  installed() = s;
}

}  // namespace ddpdesk

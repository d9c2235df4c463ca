#include "monitor_settings.h"

#include <QProcess>
#include <QtGlobal>

namespace ddpdesk::settings {

QString workerProgram() {
  return qEnvironmentVariable("DDPDESK_WORKER");
}

QString remoteWorkerProgram() {
  return qEnvironmentVariable("DDPDESK_REMOTE_WORKER");
}

QStringList sshCommand() {
  QStringList words = QProcess::splitCommand(qEnvironmentVariable("DDPDESK_SSH_COMMAND"));
  if (words.isEmpty()) words << QStringLiteral("ssh");
  return words;
}

namespace {
int seconds(const char* name, int fallback) {
  bool ok = false;
  const int s = qEnvironmentVariableIntValue(name, &ok);
  return ok && s >= 0 ? s : fallback;
}
}  // namespace

int sshReconnectSeconds() {
  return seconds("DDPDESK_SSH_RECONNECT_S", 120);
}

int silentRankSeconds() {
  return seconds("DDPDESK_SILENT_S", 120);
}

}  // namespace ddpdesk::settings

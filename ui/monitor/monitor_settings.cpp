#include "monitor_settings.h"

#include <QProcess>
#include <QtGlobal>

namespace ddpdesk::settings {

QString workerProgram() {
  return qEnvironmentVariable("DDPDESK_WORKER");
}

QStringList sshCommand() {
  QStringList words = QProcess::splitCommand(qEnvironmentVariable("DDPDESK_SSH_COMMAND"));
  if (words.isEmpty()) words << QStringLiteral("ssh");
  return words;
}

int sshReconnectSeconds() {
  bool ok = false;
  const int s = qEnvironmentVariableIntValue("DDPDESK_SSH_RECONNECT_S", &ok);
  return ok && s >= 0 ? s : 120;
}

}  // namespace ddpdesk::settings

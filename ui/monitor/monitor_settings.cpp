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

}  // namespace ddpdesk::settings

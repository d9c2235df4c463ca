#include "ssh/ssh_command.h"

#include "run/last_line.h"

namespace ddpdesk {

SshCommand::SshCommand(SshTarget target, QObject* parent)
    : QObject(parent), target_(std::move(target)) {
  deadline_.setSingleShot(true);
  connect(&deadline_, &QTimer::timeout, this, [this] {
    killedFor_ = QStringLiteral("timed out after %1 s").arg(deadline_.interval() / 1000);
    process_.kill();
  });
  connect(&process_, &QProcess::finished, this, &SshCommand::onFinished);
  connect(&process_, &QProcess::errorOccurred, this, &SshCommand::onError);
}

SshCommand::~SshCommand() {
  process_.disconnect(this);
  if (process_.state() != QProcess::NotRunning) {
    process_.kill();
    process_.waitForFinished(2000);  // reaped: no ssh left behind
  }
}

void SshCommand::start(const QStringList& remoteArgv, int timeoutMs) {
  if (!done_) return;
  done_ = false;
  killedFor_.clear();
  QStringList cmd = target_.command(remoteArgv);
  program_ = cmd.takeFirst();
  process_.setStandardInputFile(QProcess::nullDevice());
  process_.start(program_, cmd);
  deadline_.start(timeoutMs);
}

void SshCommand::cancel() {
  if (process_.state() == QProcess::NotRunning) return;
  killedFor_ = QStringLiteral("cancelled");
  process_.kill();
}

void SshCommand::onError(QProcess::ProcessError e) {
  if (e != QProcess::FailedToStart) return;  // the others end in finished()
  Result r;
  r.error = sshClientMissing(program_, process_.errorString());
  finish(r);
}

void SshCommand::onFinished(int exitCode, QProcess::ExitStatus status) {
  Result r;
  r.out = process_.readAllStandardOutput();
  r.err = process_.readAllStandardError();
  const QString where = target_.destination();
  if (!killedFor_.isEmpty()) {
    r.error = QStringLiteral("ssh %1: %2").arg(where, killedFor_);
  } else if (status != QProcess::NormalExit) {
    r.error = QStringLiteral("ssh %1: the ssh client crashed").arg(where);
  } else if (exitCode == 255) {  // ssh's own failure: no connection, no authentication
    const QString line = lastLine(r.err);
    r.error = line.isEmpty() ? QStringLiteral("ssh %1 failed (exit 255)").arg(where) : line;
  } else {
    r.ran = true;
    r.exitCode = exitCode;
    r.ok = exitCode == 0;
    if (!r.ok) {
      const QString line = lastLine(r.err);
      r.error = QStringLiteral("on %1: exit code %2%3")
                    .arg(where)
                    .arg(exitCode)
                    .arg(line.isEmpty() ? QString() : QStringLiteral(": ") + line);
    }
  }
  finish(r);
}

void SshCommand::finish(Result r) {
  if (done_) return;
  done_ = true;
  deadline_.stop();
  Q_EMIT finished(r);
}

}  // namespace ddpdesk

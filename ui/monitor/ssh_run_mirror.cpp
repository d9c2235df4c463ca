#include "ssh_run_mirror.h"

#include <QDir>

#include "remote_follow_script.h"

namespace ddpdesk {
namespace {
// ssh's ConnectTimeout covers TCP; this covers the rest (a server that accepts and says nothing).
constexpr int kConnectDeadlineMs = 30000;
}  // namespace

SshRunMirror::SshRunMirror(SshTarget target, QObject* parent)
    : QObject(parent), target_(std::move(target)) {
  connect(&ssh_, &QProcess::readyReadStandardOutput, this, &SshRunMirror::onOutput);
  connect(&ssh_, &QProcess::finished, this, &SshRunMirror::onFinished);
  connect(&ssh_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) fail(sshClientMissing(program_, ssh_.errorString()));
  });
  connect_deadline_.setSingleShot(true);
  connect(&connect_deadline_, &QTimer::timeout, this, [this] {
    fail(QStringLiteral("cannot follow %1: no answer within %2 s")
             .arg(target_.url())
             .arg(kConnectDeadlineMs / 1000));
  });
}

SshRunMirror::~SshRunMirror() {
  stop();
}

QString SshRunMirror::directory() const {
  return dir_ ? dir_->path() : QString();
}

bool SshRunMirror::start(int pollMs, QString* error) {
  dir_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + QStringLiteral("/ddpdesk-ssh-XXXXXX"));
  if (!dir_->isValid()) {
    if (error) *error = QStringLiteral("cannot create a mirror directory: ") + dir_->errorString();
    dir_.reset();
    return false;
  }
  stream_ = std::make_unique<MirrorStream>(dir_->path());
  stream_->setOnPoll([this] { Q_EMIT polled(); });
  QStringList cmd = target_.command({QStringLiteral("sh"), QStringLiteral("-c"),
                                     remoteFollowScript(), QStringLiteral("ddpdesk-follow"),
                                     target_.path, QString::number(pollMs / 1000.0, 'f', 3)});
  program_ = cmd.takeFirst();
  ssh_.setStandardInputFile(QProcess::nullDevice());
  keepFromTerminalSignals(ssh_);
  ssh_.start(program_, cmd);
  connect_deadline_.start(kConnectDeadlineMs);
  return true;
}

void SshRunMirror::stop() {
  connect_deadline_.stop();
  ssh_.disconnect(this);
  if (ssh_.state() != QProcess::NotRunning) {
    ssh_.kill();
    ssh_.waitForFinished(2000);  // reaped: no ssh outlives the follow
  }
}

void SshRunMirror::onOutput() {
  const QByteArray bytes = ssh_.readAllStandardOutput();
  const bool before = isConnected();
  QString error;
  if (!stream_->feed(bytes.constData(), std::size_t(bytes.size()), &error)) {
    fail(QStringLiteral("following %1: %2").arg(target_.url(), error));
    return;
  }
  if (!before && isConnected()) {
    connect_deadline_.stop();
    Q_EMIT connected();
  }
}

void SshRunMirror::onFinished(int exitCode, QProcess::ExitStatus status) {
  onOutput();
  const QString said = lastLine(ssh_.readAllStandardError());
  QString why;
  if (status != QProcess::NormalExit)
    why = QStringLiteral("the ssh client crashed");
  else if (exitCode == kRemoteMissingDirExit && !isConnected())
    why = QStringLiteral("no such directory on %1").arg(target_.host);
  else if (exitCode == 255)  // ssh's own failure
    why = said.isEmpty() ? QStringLiteral("ssh failed (exit 255)") : said;
  else
    why = QStringLiteral("the remote follow loop ended (exit %1)%2")
              .arg(exitCode)
              .arg(said.isEmpty() ? QString() : QStringLiteral(": ") + said);
  fail((isConnected() ? QStringLiteral("lost the connection to %1: %2")
                      : QStringLiteral("cannot follow %1: %2"))
           .arg(target_.url(), why));
}

void SshRunMirror::fail(const QString& why) {
  if (failed_) return;
  failed_ = true;
  stop();
  Q_EMIT failed(why);
}

}  // namespace ddpdesk

#include "ssh/ssh_run_mirror.h"

#include <QDir>

#include "run/last_line.h"
#include "run/monitor_settings.h"
#include "ssh/remote_follow_script.h"

namespace ddpdesk {
namespace {
// ssh's ConnectTimeout covers TCP; this covers the rest (a server that accepts and says nothing).
constexpr int kConnectDeadlineMs = 30000;
// Pauses before the reconnection attempts: 1, 2, 4, 8 s, then this.
constexpr int kMaxRetryPauseMs = 15000;

int retryPauseMs(int attempt) {  // attempt 1, 2, ...
  return std::min(1000 << std::min(attempt - 1, 4), kMaxRetryPauseMs);
}

}  // namespace

SshRunMirror::SshRunMirror(SshTarget target, QObject* parent)
    : QObject(parent), target_(std::move(target)) {
  connect_deadline_.setSingleShot(true);
  connect(&connect_deadline_, &QTimer::timeout, this, &SshRunMirror::onDeadline);
  retry_.setSingleShot(true);
  connect(&retry_, &QTimer::timeout, this, &SshRunMirror::launch);
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
  stream_ = std::make_unique<RemoteRecordMirror>(dir_->path());
  stream_->setOnPoll([this] { Q_EMIT polled(); });
  poll_seconds_ = QString::number(pollMs / 1000.0, 'f', 3);
  launch();
  return true;
}

// One ssh running the remote loop; after a lost connection, told what the mirror already holds.
void SshRunMirror::launch() {
  stream_->newConnection();
  QStringList cmd =
      target_.command(QStringList{QStringLiteral("sh"), QStringLiteral("-c"), remoteFollowScript(),
                                  QStringLiteral("ddpdesk-follow"), target_.path, poll_seconds_} +
                      stream_->resumeState());
  program_ = cmd.takeFirst();
  ssh_ = new QProcess(this);
  connect(ssh_, &QProcess::readyReadStandardOutput, this, &SshRunMirror::onOutput);
  connect(ssh_, &QProcess::finished, this, &SshRunMirror::onFinished);
  connect(ssh_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) fail(sshClientMissing(program_, ssh_->errorString()));
  });
  ssh_->setStandardInputFile(QProcess::nullDevice());
  keepFromTerminalSignals(*ssh_);
  ssh_->start(program_, cmd);
  connect_deadline_.start(kConnectDeadlineMs);
}

void SshRunMirror::stop() {
  connect_deadline_.stop();
  retry_.stop();
  dropSsh();
}

// Kills and reaps the current ssh without hearing from it again: no ssh outlives the follow.
// Deleted later: this may run inside one of its own signals.
void SshRunMirror::dropSsh() {
  if (!ssh_) return;
  ssh_->disconnect(this);
  if (ssh_->state() != QProcess::NotRunning) {
    ssh_->kill();
    ssh_->waitForFinished(2000);
  }
  ssh_->deleteLater();
  ssh_ = nullptr;
}

void SshRunMirror::onOutput() {
  const QByteArray bytes = ssh_->readAllStandardOutput();
  const bool before = isConnected();
  QString error;
  if (!stream_->feed(bytes.constData(), std::size_t(bytes.size()), &error)) {
    fail(QStringLiteral("following %1: %2").arg(target_.url(), error));
    return;
  }
  if (before || !isConnected()) return;
  connect_deadline_.stop();
  if (!ever_connected_) {
    ever_connected_ = true;
    Q_EMIT connected();
    return;
  }
  const QString text =
      QStringLiteral(
          "reconnected to %1 after %2 s (%3 attempt(s)): reading on from the bytes "
          "already mirrored")
          .arg(target_.url())
          .arg(lost_since_.elapsed() / 1000)
          .arg(attempts_);
  attempts_ = 0;
  lost_since_.invalidate();
  Q_EMIT reconnected(text);
}

void SshRunMirror::onFinished(int exitCode, QProcess::ExitStatus status) {
  onOutput();
  if (failed_) return;
  const QString said = lastLine(ssh_->readAllStandardError());
  const bool connectedNow = isConnected();
  dropSsh();
  if (exitCode == kRemoteMissingDirExit && status == QProcess::NormalExit && !connectedNow) {
    fail(QStringLiteral("cannot follow %1: no such directory on %2%3")
             .arg(target_.url(), target_.host,
                  ever_connected_ ? QStringLiteral(" any more") : QString()));
    return;
  }
  QString why;
  if (status != QProcess::NormalExit)
    why = QStringLiteral("the ssh client crashed");
  else if (exitCode == 255)  // ssh's own failure
    why = said.isEmpty() ? QStringLiteral("ssh failed (exit 255)") : said;
  else
    why = QStringLiteral("the remote follow loop ended (exit %1)%2")
              .arg(exitCode)
              .arg(said.isEmpty() ? QString() : QStringLiteral(": ") + said);
  connectionEnded(why);
}

void SshRunMirror::onDeadline() {
  dropSsh();
  connectionEnded(QStringLiteral("no answer within %1 s").arg(kConnectDeadlineMs / 1000));
}

// The current ssh is gone (reaped). Before the first connection that is the end; after it, the
// next attempt is scheduled while the time allowed lasts.
void SshRunMirror::connectionEnded(const QString& why) {
  connect_deadline_.stop();
  if (!ever_connected_) {
    fail(QStringLiteral("cannot follow %1: %2").arg(target_.url(), why));
    return;
  }
  if (!lost_since_.isValid()) lost_since_.start();
  const QString said = why.endsWith(QLatin1Char('.')) ? why.chopped(1) : why;  // ssh ends with '.'

  const qint64 limitMs = qint64(monitorSettings().sshReconnectSeconds) * 1000;
  const int pause = retryPauseMs(attempts_ + 1);
  if (lost_since_.elapsed() + pause > limitMs) {
    fail(QStringLiteral("lost the connection to %1: %2%3")
             .arg(target_.url(), said,
                  limitMs == 0 ? QString()
                               : QStringLiteral(" (gave up after %1 attempt(s) in %2 s)")
                                     .arg(attempts_)
                                     .arg(lost_since_.elapsed() / 1000)));
    return;
  }
  ++attempts_;
  Q_EMIT connectionLost(
      QStringLiteral("lost the connection to %1: %2; reconnecting in %3 s (attempt %4, giving up "
                     "%5 s after the loss)")
          .arg(target_.url(), said)
          .arg(pause / 1000)
          .arg(attempts_)
          .arg(limitMs / 1000));
  retry_.start(pause);
}

void SshRunMirror::fail(const QString& why) {
  if (failed_) return;
  failed_ = true;
  stop();
  Q_EMIT failed(why);
}

}  // namespace ddpdesk

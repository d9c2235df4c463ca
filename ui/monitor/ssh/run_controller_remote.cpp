// RunController's side of following a run on another host (attach("ssh://…")) and of signalling
// followed ranks wherever they run. See run_controller.h.
#include <csignal>

#include "follow/run_follower.h"
#include "metrics/metrics_store.h"
#include "run/run_controller.h"
#include "run/run_directory.h"
#include "ssh/ssh_command.h"
#include "ssh/ssh_run_mirror.h"

namespace ddpdesk {
namespace {

// Longer than a remote poll plus its way here: a rank restarting right after a failure is seen
// before the run is declared over.
constexpr int kRemoteSettleMs = 2500;

}  // namespace

bool RunController::attachRemote(const QString& url, QString* error) {
  const auto target = SshTarget::parse(url, error);
  if (!target) return false;
  dir_.reset();  // nothing is written into a followed directory, here or there
  resetRun(0);
  spec_ = RunSpec();
  spec_.nproc = 0;
  run_dir_path_ = target->url();
  spec_.run_dir = run_dir_path_.toStdString();
  mirror_ = new SshRunMirror(*target, this);
  if (!mirror_->start(SshRunMirror::kPollMs, error)) {
    delete mirror_;
    mirror_ = nullptr;
    return false;
  }
  connect(mirror_, &SshRunMirror::connected, this, &RunController::onRemoteConnected);
  connect(mirror_, &SshRunMirror::failed, this, &RunController::onRemoteFailed);
  // A lost connection is tried again (SshRunMirror): the run strip says so meanwhile, headless
  // prints a line each way.
  connect(mirror_, &SshRunMirror::connectionLost, this, [this](const QString& text) {
    launcher_status_ = QStringLiteral("connection lost, reconnecting");
    Q_EMIT launcherStatusChanged(text);
  });
  connect(mirror_, &SshRunMirror::reconnected, this, [this](const QString& text) {
    launcher_status_.clear();
    Q_EMIT launcherStatusChanged(text);
  });
  setState(State::Starting);
  return true;
}

void RunController::onRemoteConnected() {
  const QString dir = mirror_->directory();
  if (const auto record = RunDirectory::readRecord(dir); record && record->specValid) {
    spec_ = record->spec;  // started by ddpdesk there: epochs and task for the progress line
    spec_.run_dir = run_dir_path_.toStdString();
    spec_.nproc = 0;
  }
  RunFollower* f = newFollower();
  f->setSettleTime(kRemoteSettleMs);
  followMirror(f);
  Q_EMIT remoteConnected();
}

void RunController::followMirror(RunFollower* f) {
  // Only the remote host's own pid checks say a rank there is gone; ranks elsewhere end by
  // their last message.
  SshRunMirror* m = mirror_;
  f->setPidProbe([m](const wire::Hello& h) -> std::optional<bool> {
    if (QString::fromStdString(h.host) != m->stream().remoteHost()) return std::nullopt;
    return m->stream().alive(h.rank, h.pid);
  });
  // Read the mirror as soon as a remote poll is in it, and before a file of it is replaced.
  m->stream().setBeforeReset([f] { f->pollNow(); });
  connect(m, &SshRunMirror::polled, f, &RunFollower::pollNow);
  QString err;
  f->follow(m->directory(), &err);  // the mirror: a directory of ours
}

void RunController::onRemoteFailed(const QString& why) {
  const bool began = follower_ != nullptr;
  if (follower_) follower_->stop();
  if (!began) Q_EMIT attachFailed(why);
  Q_EMIT warning(why);
  store_->flush();
  reason_ = why;
  ended_at_ = QDateTime::currentDateTime();
  setState(State::Failed);
}

bool RunController::signalFollowedRanks(int signo) {
  if (!mirror_) {
    if (follower_->signalLocalRanks(signo) > 0) return true;
    Q_EMIT warning(QStringLiteral("no rank of this run runs on this host: stop it where it runs"));
    return false;
  }
  QStringList pids;
  for (const auto& [rank, r] : follower_->ranks())
    if (r.hello && !r.ended() && r.info.pid > 0 &&
        QString::fromStdString(r.info.host) == mirror_->stream().remoteHost())
      pids << QString::number(r.info.pid);
  if (pids.isEmpty()) {
    Q_EMIT warning(QStringLiteral("no running rank of this run is on %1: stop it where it runs")
                       .arg(mirror_->target().host));
    return false;
  }
  auto* cmd = new SshCommand(mirror_->target(), this);
  connect(cmd, &SshCommand::finished, this, [this, cmd](const SshCommand::Result& r) {
    if (!r.ok) Q_EMIT warning(QStringLiteral("could not signal the ranks: ") + r.error);
    cmd->deleteLater();
  });
  cmd->start(QStringList{QStringLiteral("kill"),
                         signo == SIGKILL ? QStringLiteral("-KILL") : QStringLiteral("-TERM")} +
             pids);
  return true;
}

}  // namespace ddpdesk

// SshFollowedBackend (ssh_followed_backend.h): following a run on another host through an ssh
// mirror, and signalling its ranks there.
#include "ssh/ssh_followed_backend.h"

#include <csignal>

#include "follow/run_follower.h"
#include "metrics/metrics_store.h"
#include "run/run_directory.h"
#include "ssh/ssh_command.h"
#include "ssh/ssh_run_mirror.h"

namespace ddpdesk {
namespace {

// Longer than a remote poll plus its way here: a rank restarting right after a failure is seen
// before the run is declared over.
constexpr int kRemoteSettleMs = 2500;

}  // namespace

SshFollowedBackend::SshFollowedBackend(RunController& run) : FollowedBackend(run) {}

SshFollowedBackend::~SshFollowedBackend() = default;

bool SshFollowedBackend::attach(const QString& url, QString* error) {
  const auto target = SshTarget::parse(url, error);
  if (!target) return false;
  beginFollowing(target->url(), RunSpec());
  mirror_ = new SshRunMirror(*target, this);
  if (!mirror_->start(SshRunMirror::kPollMs, error)) {
    delete mirror_;
    mirror_ = nullptr;
    return false;
  }
  connect(mirror_, &SshRunMirror::connected, this, &SshFollowedBackend::onConnected);
  connect(mirror_, &SshRunMirror::failed, this, &SshFollowedBackend::onFailed);
  // A lost connection is tried again (SshRunMirror): the run strip says so meanwhile, headless
  // prints a line each way.
  connect(mirror_, &SshRunMirror::connectionLost, this, [this](const QString& text) {
    launcherStatus() = QStringLiteral("connection lost, reconnecting");
    Q_EMIT run().launcherStatusChanged(text);
  });
  connect(mirror_, &SshRunMirror::reconnected, this, [this](const QString& text) {
    launcherStatus().clear();
    Q_EMIT run().launcherStatusChanged(text);
  });
  setState(State::Starting);
  return true;
}

void SshFollowedBackend::onConnected() {
  const QString dir = mirror_->directory();
  if (const auto record = RunDirectory::readRecord(dir); record && record->specValid) {
    spec() = record->spec;  // started by ddpdesk there: epochs and task for the progress line
    spec().run_dir = runDir().toStdString();
    spec().nproc = 0;
    recorded_world_ = record->spec.world_size();  // a script's ranks may never say hello
  }
  RunFollower* f = newFollower(/*filesEndTheRun=*/true);
  f->setSettleTime(kRemoteSettleMs);
  followMirror(f, mirror_);
  Q_EMIT run().remoteConnected();
}

void followMirror(RunFollower* f, SshRunMirror* m) {
  // Only the remote host's own pid checks say a rank there is gone; ranks elsewhere end by
  // their last message.
  f->setPidProbe([m](const wire::Hello& h) -> std::optional<bool> {
    if (QString::fromStdString(h.host) != m->stream().remoteHost()) return std::nullopt;
    return m->stream().alive(h.rank, h.pid);
  });
  // Read the mirror as soon as a remote poll is in it, and before a file of it is replaced.
  m->stream().setBeforeReset([f] { f->pollNow(); });
  QObject::connect(m, &SshRunMirror::polled, f, &RunFollower::pollNow);
  QString err;
  f->follow(m->directory(), &err);  // the mirror: a directory of ours
}

void SshFollowedBackend::onFailed(const QString& why) {
  const bool began = follower_ != nullptr;
  if (follower_) follower_->stop();
  if (!began) Q_EMIT run().attachFailed(why);
  Q_EMIT run().warning(why);

  endRun(State::Failed, why);
}

bool SshFollowedBackend::signalRanks(int signo) {
  QStringList pids;
  if (follower_)
    for (const auto& [rank, r] : follower_->ranks())
      if (r.hello && !r.ended() && r.info.pid > 0 &&
          QString::fromStdString(r.info.host) == mirror_->stream().remoteHost())
        pids << QString::number(r.info.pid);
  if (pids.isEmpty()) {
    Q_EMIT run().warning(
        QStringLiteral("no running rank of this run is on %1: stop it where it runs")
            .arg(mirror_->target().host));
    return false;
  }
  auto* cmd = new SshCommand(mirror_->target(), this);
  RunController* c = &run();
  connect(cmd, &SshCommand::finished, this, [c, cmd](const SshCommand::Result& r) {
    if (!r.ok) Q_EMIT c->warning(QStringLiteral("could not signal the ranks: ") + r.error);
    cmd->deleteLater();
  });
  cmd->start(QStringList{QStringLiteral("kill"),
                         signo == SIGKILL ? QStringLiteral("-KILL") : QStringLiteral("-TERM")} +
             pids);
  return true;
}

}  // namespace ddpdesk

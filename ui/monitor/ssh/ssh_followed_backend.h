// SshFollowedBackend: attach("ssh://[user@]host[:port]/dir") follows a run directory on another
// host as FollowedBackend follows one here, through a local mirror kept by an SshRunMirror (one
// ssh process): ranks on that host that die without a word are seen through its pid checks, and
// stop()/kill() reach them with `ssh host kill -TERM/-KILL <pids>`. Until the host answers the
// state is Starting; a host that cannot be followed emits attachFailed() and ends in Failed.
#pragma once

#include "follow/followed_backend.h"

namespace ddpdesk {

class RunFollower;
class SshRunMirror;

class SshFollowedBackend : public FollowedBackend {
  Q_OBJECT
 public:
  explicit SshFollowedBackend(RunController& run);
  ~SshFollowedBackend() override;

  bool attach(const QString& url, QString* error) override;

 protected:
  bool signalRanks(int signo) override;

 private:
  void onConnected();
  void onFailed(const QString& why);
};

// Has `f` follow the mirror `m` of a remote directory: the remote host's pid checks for the
// ranks there, a read whenever a remote poll is in.
void followMirror(RunFollower* f, SshRunMirror* m);

}  // namespace ddpdesk

// Keeps a monitor's private socket directory (MetricsServer) from outliving the monitor.
// - While a directory is in use, its owner holds an flock on a lock file in it, which the kernel
//   lets go of however the owner ends (an open file description of its own: ranks started by
//   the monitor do not inherit it).
// - Exits that skip the owner's destructors still remove it: exit() (atexit) and the signals
//   that end a process by default (SIGTERM, SIGHUP, SIGINT, SIGQUIT, and crashes), whose
//   handler unlinks the socket and lock file and removes the directory with async-signal-safe
//   calls, then ends the process as the signal would have. A handler someone else installed
//   (headless mode's graceful stop on SIGINT/SIGTERM) is left in place: that path unwinds.
// - Only SIGKILL (or a power cut) leaves one behind: the next monitor to start sweeps every
//   directory of this kind whose lock's owner is gone.
#pragma once

#include <QString>

namespace ddpdesk {

class SocketDirGuard {
 public:
  // Name of the lock file inside each socket directory.
  static constexpr const char* kLockName = "owner.lock";

  SocketDirGuard() = default;
  SocketDirGuard(const SocketDirGuard&) = delete;
  SocketDirGuard& operator=(const SocketDirGuard&) = delete;
  // Creates a private directory `base`/`prefix`XXXXXX (0700) for a socket named `socketName`
  // and guards it. False with *error (one line) when it cannot be created or locked; nothing is
  // left behind then.
  bool create(const QString& base, const QString& prefix, const QString& socketName,
              QString* error = nullptr);
  QString dir() const { return dir_; }
  // Stops guarding: the owner removes the directory itself (MetricsServer::close()).
  void release();
  ~SocketDirGuard();

  // Removes the directories named `prefix`* in `base` whose owner process is gone; returns how
  // many. Directories without a lock file are left alone (one may be being set up right now).
  static int sweepStale(const QString& base, const QString& prefix);

 private:
  bool claimSlot(const QString& dir, const QString& socketPath, const QString& lockPath);
  void freeSlot();

  int lock_fd_ = -1;
  QString lock_path_;
  QString dir_;
  int slot_ = -1;
};

}  // namespace ddpdesk

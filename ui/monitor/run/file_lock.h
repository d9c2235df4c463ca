// FileLock: one ddpdesk process's claim on something kept in files (a run directory, a queue
// file), as an exclusive flock(2) on a small lock file beside it. The kernel drops the lock when
// the holder's last descriptor closes: at its exit, a crash or a SIGKILL alike, so a dead holder
// never leaves a stale claim. The descriptor is close-on-exec: ranks and other children do not
// inherit it. While held, the file says who holds it ("pid 4711 on host"); the holder empties it
// on release. The file itself stays (removing it would race with a process about to lock it).
// On NFS, Linux takes flock(2) as a byte-range lock of the server's lock manager, so holders on
// different clients exclude each other too (not with the `nolock` or `local_lock=flock` mount
// options, where a lock is only seen on its own machine); a client that dies keeps its lock
// until the server reclaims it (NFSv4: its lease runs out).
#pragma once

#include <QString>

namespace ddpdesk {

class FileLock {
 public:
  FileLock() = default;
  ~FileLock() { release(); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Takes the lock at `path` (creating the file) without waiting. Empty when taken; else who
  // holds it ("ddpdesk pid 4711 on host", or "another process" when it has not said yet), or why
  // the file cannot be locked ("cannot lock FILE: Permission denied"), as `*held` tells.
  QString acquire(const QString& path, bool* held = nullptr);
  void release();
  bool isHeld() const { return fd_ >= 0; }

  // Who holds the lock at `path` now, as acquire() names them; empty when no one does (or there
  // is no such file). Takes nothing that outlives the call.
  static QString holder(const QString& path);

 private:
  int fd_ = -1;
};

}  // namespace ddpdesk

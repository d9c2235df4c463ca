#include "metrics/socket_dir_guard.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <sys/stat.h>

#include <QDir>
#include <QFileInfo>
#include <QRandomGenerator>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ddpdesk {
namespace {

// What the signal handler removes, as plain C strings written before the slot is marked in use
// (a handler may run at any moment on any thread; it only reads).
struct Slot {
  std::atomic<bool> used{false};
  char socket[256];
  char lock[256];
  char lock_new[256];  // the lock file before it is renamed into place
  char dir[256];
};
constexpr int kSlots = 8;  // monitors alive at once in one process (tests run a few)
Slot slots[kSlots];

void removeSlot(Slot& s) {
  ::unlink(s.socket);
  ::unlink(s.lock);
  ::unlink(s.lock_new);
  ::rmdir(s.dir);
}

void removeAll() {
  for (Slot& s : slots)
    if (s.used.exchange(false)) removeSlot(s);
}

void onFatalSignal(int signo) {
  removeAll();
  std::signal(signo, SIG_DFL);
  ::raise(signo);  // ends the process as the signal would have (core dump, exit status)
}

void installOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(removeAll);
    for (int signo : {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
      struct sigaction old {};
      if (::sigaction(signo, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = onFatalSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND;
      ::sigaction(signo, &sa, nullptr);
    }
  });
}

bool copyPath(char (&to)[256], const QString& path) {
  const QByteArray b = QFile::encodeName(path);
  if (b.size() >= int(sizeof to)) return false;
  std::memcpy(to, b.constData(), std::size_t(b.size()) + 1);
  return true;
}

}  // namespace

// The handlers are installed and the directory's paths handed to them before the directory
// exists: a signal at any moment of the set-up finds what to remove (removing what does not
// exist yet is harmless), so no window is left in which a fatal signal leaves a directory.
bool SocketDirGuard::create(const QString& base, const QString& prefix, const QString& socketName,
                            QString* error) {
  release();
  installOnce();
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    release();
    return false;
  };
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int attempt = 0; attempt < 100 && dir_.isEmpty(); ++attempt) {
    QString dir = base + QLatin1Char('/') + prefix;
    for (int i = 0; i < 6; ++i)
      dir += QLatin1Char(kChars[QRandomGenerator::system()->bounded(int(sizeof kChars) - 1)]);
    const QString lock = dir + QLatin1Char('/') + QLatin1String(kLockName);
    if (!claimSlot(dir, dir + QLatin1Char('/') + socketName, lock))
      return fail(QStringLiteral("socket directory path too long: %1").arg(dir));
    if (::mkdir(QFile::encodeName(dir).constData(), 0700) == 0) {
      dir_ = dir;
      break;
    }
    const int err = errno;
    freeSlot();
    if (err != EEXIST)
      return fail(QStringLiteral("cannot create a socket directory in %1: %2")
                      .arg(base, QString::fromLocal8Bit(std::strerror(err))));
  }
  if (dir_.isEmpty())
    return fail(QStringLiteral("cannot create a socket directory in %1").arg(base));
  // Locked under a temporary name and renamed into place, so whenever the lock file exists it is
  // held: a sweeper can never take a directory being set up for a stale one.
  const QString path = dir_ + QLatin1Char('/') + QLatin1String(kLockName);
  const QByteArray tmp = QFile::encodeName(path + QStringLiteral(".new"));
  const int fd = ::open(tmp.constData(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0 ||
      ::rename(tmp.constData(), QFile::encodeName(path).constData()) != 0) {
    const QString why = QString::fromLocal8Bit(std::strerror(errno));
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.constData());
    ::rmdir(QFile::encodeName(dir_).constData());
    return fail(QStringLiteral("cannot lock the socket directory %1: %2").arg(dir_, why));
  }
  lock_fd_ = fd;
  lock_path_ = path;
  return true;
}

bool SocketDirGuard::claimSlot(const QString& dir, const QString& socketPath,
                               const QString& lockPath) {
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = slots[i];
    if (s.used.load()) continue;
    if (!copyPath(s.socket, socketPath) || !copyPath(s.lock, lockPath) ||
        !copyPath(s.lock_new, lockPath + QStringLiteral(".new")) || !copyPath(s.dir, dir))
      return false;
    bool expected = false;
    if (s.used.compare_exchange_strong(expected, true)) {
      slot_ = i;
      return true;
    }
  }
  return true;  // every slot taken (more monitors than kSlots): unguarded, swept when stale
}

void SocketDirGuard::freeSlot() {
  if (slot_ >= 0) slots[slot_].used.store(false);
  slot_ = -1;
}

void SocketDirGuard::release() {
  freeSlot();
  if (lock_fd_ >= 0) {
    ::unlink(QFile::encodeName(lock_path_).constData());
    ::close(lock_fd_);
  }
  lock_fd_ = -1;
  lock_path_.clear();
  dir_.clear();
}

SocketDirGuard::~SocketDirGuard() {
  release();
}

int SocketDirGuard::sweepStale(const QString& base, const QString& prefix) {
  int removed = 0;
  const QFileInfoList dirs =
      QDir(base).entryInfoList({prefix + QLatin1Char('*')}, QDir::Dirs | QDir::NoDotAndDotDot);
  for (const QFileInfo& d : dirs) {
    if (d.isSymLink() || d.ownerId() != ::getuid()) continue;
    const QString lockPath = d.filePath() + QLatin1Char('/') + QLatin1String(kLockName);
    // Taken only when no process holds it any more: its owner is gone.
    const int fd = ::open(QFile::encodeName(lockPath).constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const bool stale = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    if (!stale) continue;
    if (QDir(d.filePath()).removeRecursively()) ++removed;
  }
  return removed;
}

}  // namespace ddpdesk

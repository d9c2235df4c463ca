#include "run/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <QFile>
#include <QHostInfo>
#include <cerrno>
#include <cstring>
#include <thread>

namespace ddpdesk {
namespace {

// What a holder writes into its lock file.
QByteArray selfText() {
  return QStringLiteral("ddpdesk pid %1 on %2\n")
      .arg(::getpid())
      .arg(QHostInfo::localHostName())
      .toUtf8();
}

// The holder's line in an open lock file.
QString holderText(int fd) {
  char buffer[256];
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  const QString text =
      n > 0 ? QString::fromUtf8(buffer, int(n)).section(QLatin1Char('\n'), 0, 0).trimmed()
            : QString();
  return text.isEmpty() ? QStringLiteral("another process") : text;
}

QString lockError(const QString& path) {
  return QStringLiteral("cannot lock %1: %2")
      .arg(path, QString::fromLocal8Bit(std::strerror(errno)));
}

}  // namespace

QString FileLock::acquire(const QString& path, bool* held) {
  release();
  if (held) *held = false;
  const int fd = ::open(QFile::encodeName(path).constData(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return lockError(path);
  // holder() takes a shared lock for an instant: a few tries get past one.
  for (int attempt = 0;; ++attempt) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) break;
    const bool busy = errno == EWOULDBLOCK;
    if (!busy || attempt == 20) {
      const QString why = busy ? holderText(fd) : lockError(path);
      if (held) *held = busy;
      ::close(fd);
      return why;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const QByteArray self = selfText();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, self.constData(), size_t(self.size()), 0) < 0) {
    // Held all the same; only the name of the holder is missing.
  }
  fd_ = fd;
  return {};
}

void FileLock::release() {
  if (fd_ < 0) return;
  if (::ftruncate(fd_, 0) != 0) {
    // The next holder overwrites it.
  }
  ::close(fd_);  // drops the lock
  fd_ = -1;
}

QString FileLock::holder(const QString& path) {
  const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  QString who;
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0)
    ::flock(fd, LOCK_UN);
  else if (errno == EWOULDBLOCK)
    who = holderText(fd);
  ::close(fd);
  return who;
}

}  // namespace ddpdesk

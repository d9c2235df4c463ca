#include "follow/metrics_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "wire.h"

namespace ddpdesk {
namespace {

// Enough to tell one run's file from another's: the hello line, with its pid, comes first.
constexpr std::size_t kPrefixBytes = 256;

ssize_t read_at(int fd, char* buf, std::size_t n, off_t at) {
  for (;;) {
    const ssize_t got = ::pread(fd, buf, n, at);
    if (got >= 0 || errno != EINTR) return got;
  }
}

}  // namespace

MetricsTail::MetricsTail(QString path, qint64 maxBytesPerPoll)
    : path_(std::move(path)),
      max_bytes_(maxBytesPerPoll),
      lines_(wire::kMaxLineBytes, LineBuffer::Overflow::Split) {}

void MetricsTail::restart() {
  offset_ = 0;
  prefix_.clear();
  lines_.clear();
}

QString MetricsTail::prefixChange(int fd) const {
  if (prefix_.empty()) return {};
  std::string now(prefix_.size(), '\0');
  const ssize_t got = read_at(fd, now.data(), now.size(), 0);
  if (got < ssize_t(prefix_.size())) return QStringLiteral("truncated");
  return now == prefix_ ? QString() : QStringLiteral("rewritten");
}

MetricsTail::Poll MetricsTail::poll(const std::function<void(std::string_view)>& on_line) {
  Poll p;
  const QByteArray native = path_.toLocal8Bit();
  const int fd = ::open(native.constData(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return p;  // not there (yet, or while being replaced): nothing to read
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return p;
  }
  p.exists = true;
  if (known_ && (st.st_dev != dev_ || st.st_ino != ino_)) {
    p.restarted = true;
    p.restartReason = QStringLiteral("replaced");
  } else if (known_ && st.st_size < offset_) {
    p.restarted = true;
    p.restartReason = QStringLiteral("truncated");
  } else if (known_) {
    p.restartReason = prefixChange(fd);
    p.restarted = !p.restartReason.isEmpty();
  }
  if (p.restarted) restart();
  known_ = true;
  dev_ = st.st_dev;
  ino_ = st.st_ino;

  qint64 want = std::min<qint64>(qint64(st.st_size) - offset_, max_bytes_);
  std::vector<char> buf(std::size_t(std::min<qint64>(want, 1 << 20)));
  while (want > 0) {
    const ssize_t got = read_at(fd, buf.data(), std::min<std::size_t>(buf.size(), want), offset_);
    if (got <= 0) break;  // shrank under us: the next poll sees it truncated
    if (prefix_.size() < kPrefixBytes && offset_ < qint64(kPrefixBytes))
      prefix_.append(buf.data(), std::min<std::size_t>(kPrefixBytes - prefix_.size(), got));
    lines_.feed(buf.data(), std::size_t(got), on_line);
    offset_ += got;
    p.bytes += got;
    want -= got;
  }
  p.more = offset_ < qint64(st.st_size);
  ::close(fd);
  return p;
}

}  // namespace ddpdesk

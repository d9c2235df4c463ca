// The writing end of a worker's metrics connection, for benchmarks that stream into the real
// MetricsServer from their own threads (plain sockets: no event loop on those threads).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <QString>
#include <algorithm>
#include <cstring>
#include <string>

inline int connectTo(const QString& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const QByteArray p = path.toLocal8Bit();
  std::memcpy(addr.sun_path, p.constData(),
              std::min(sizeof addr.sun_path - 1, std::size_t(p.size())));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Blocking write of all of `data`, in 64 KiB pieces; gives up quietly when the server is gone.
inline void writeAll(int fd, const std::string& data) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    const ssize_t w = ::send(fd, p, std::min<std::size_t>(left, 64 * 1024), MSG_NOSIGNAL);
    if (w <= 0) return;
    p += w;
    left -= std::size_t(w);
  }
}

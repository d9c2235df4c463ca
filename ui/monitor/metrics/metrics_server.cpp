#include "metrics/metrics_server.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLocalServer>
#include <QLocalSocket>
#include <QStringList>
#include <QTimer>
#include <algorithm>
#include <utility>

#include "metrics/line_buffer.h"
#include "metrics/socket_dir_guard.h"

namespace ddpdesk {

struct MetricsServer::Connection {
  explicit Connection(QLocalSocket* s) : socket(s), lines(wire::kMaxLineBytes) {}
  QLocalSocket* socket;
  LineBuffer lines;
  bool believed = false;
  int rank = -1;
  bool reportedType = false;   // an unknown message type was named in ignoredInput()
  bool reportedField = false;  // an unknown field was
};

namespace {

// sockaddr_un holds 108 bytes; keep well inside it.
constexpr int kMaxSocketPath = 100;

QString socketBaseDir() {
  // XDG_RUNTIME_DIR is the user's own 0700 tmpfs when a session provides it.
  const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
  if (!runtime.isEmpty() && QFileInfo(runtime).isDir() && runtime.size() < kMaxSocketPath - 30)
    return runtime;
  const QString tmp = QDir::tempPath();
  return tmp.size() < kMaxSocketPath - 30 ? tmp : QStringLiteral("/tmp");
}

// Compares in time independent of where the first difference is.
bool sameToken(std::string_view a, const QByteArray& b) {
  if (a.size() != static_cast<std::size_t>(b.size())) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[int(i)]);
  return diff == 0;
}

}  // namespace

MetricsServer::MetricsServer(QObject* parent) : QObject(parent) {}

MetricsServer::~MetricsServer() {
  close();
}

bool MetricsServer::listen(const QString& token, int world, QString* error) {
  close();
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    close();
    return false;
  };
  if (token.isEmpty()) return fail(QStringLiteral("empty token"));
  // Directories left by monitors that were killed outright (SIGKILL) go first.
  const QString base = socketBaseDir();
  SocketDirGuard::sweepStale(base, QStringLiteral("ddpdesk-"));
  guard_ = std::make_unique<SocketDirGuard>();
  if (QString why;
      !guard_->create(base, QStringLiteral("ddpdesk-"), QStringLiteral("metrics.sock"), &why))
    return fail(why);
  dir_path_ = guard_->dir();
  socket_path_ = dir_path_ + QStringLiteral("/metrics.sock");
  token_ = token.toUtf8();
  world_ = world;
  server_ = new QLocalServer(this);
  // No socket options: the 0700 directory is the access control. With options, Qt binds the
  // socket in a hidden temporary directory beside it and renames it into place, and a fatal
  // signal in between left that directory, so the socket directory could not be removed.
  // Every rank connects at start-up at once; the default backlog (30) is below a big world.
  server_->setMaxPendingConnections(std::max(64, world + 8));
  connect(server_, &QLocalServer::newConnection, this, &MetricsServer::onNewConnection);
  if (!server_->listen(socket_path_))
    return fail(
        QStringLiteral("cannot listen on %1: %2").arg(socket_path_, server_->errorString()));
  return true;
}

void MetricsServer::close() {
  const auto conns = connections_;
  connections_.clear();
  for (const auto& c : conns) {
    c->socket->disconnect(this);
    c->socket->abort();
    c->socket->deleteLater();
  }
  if (server_) {
    server_->close();
    server_->deleteLater();
    server_ = nullptr;
  }
  guard_.reset();                                                 // its lock file goes first
  if (!dir_path_.isEmpty()) QDir(dir_path_).removeRecursively();  // the socket file and the dir
  dir_path_.clear();
  socket_path_.clear();
}

bool MetricsServer::isListening() const {
  return server_ && server_->isListening();
}

QString MetricsServer::socketPath() const {
  return socket_path_;
}

int MetricsServer::connectionCount() const {
  return int(connections_.size());
}

void MetricsServer::onNewConnection() {
  while (QLocalSocket* socket = server_->nextPendingConnection()) {
    connections_.insert(socket, std::make_shared<Connection>(socket));
    connect(socket, &QLocalSocket::readyRead, this, [this, socket] { onReadyRead(socket); });
    connect(socket, &QLocalSocket::disconnected, this, [this, socket] { onDisconnected(socket); });
    // A peer that never says hello would hold a descriptor for the whole run.
    QTimer::singleShot(hello_timeout_ms_, socket, [this, socket] {
      auto it = connections_.find(socket);
      if (it != connections_.end() && !(*it)->believed)
        drop(socket, QStringLiteral("no hello within %1 ms").arg(hello_timeout_ms_));
    });
    if (socket->bytesAvailable() > 0) onReadyRead(socket);
  }
}

bool MetricsServer::handleHello(Connection& c, std::string_view line, QString* why) {
  wire::Decoded d = wire::decode(line);
  if (!d.message || !std::holds_alternative<wire::Hello>(*d.message)) {
    *why = QStringLiteral("first line is not a hello");
    return false;
  }
  wire::Hello& h = std::get<wire::Hello>(*d.message);
  if (!sameToken(h.token, token_)) {
    *why = QStringLiteral("wrong token");
    return false;
  }
  if (!wire::compatible(h)) {
    *why = QStringLiteral("rank %1 speaks wire versions %2..%3; this monitor reads %4..%5")
               .arg(h.rank)
               .arg(h.v_min)
               .arg(h.v_max)
               .arg(wire::kMinVersion)
               .arg(wire::kMaxVersion);
    return false;
  }
  if (world_ > 0 && h.world != world_) {
    *why = QStringLiteral("hello claims world %1, the run has %2").arg(h.world).arg(world_);
    return false;
  }
  c.believed = true;
  c.rank = h.rank;
  h.token.clear();  // the token never reaches listeners or disk
  const std::string recorded = wire::encode(h);
  batch_lines_.append(recorded.data(), qsizetype(recorded.size())).append('\n');
  batch_.push_back(std::move(*d.message));
  return true;
}

void MetricsServer::onReadyRead(QLocalSocket* socket) {
  auto it = connections_.find(socket);
  if (it == connections_.end()) return;
  std::shared_ptr<Connection> c = *it;  // keeps the state alive if a listener closes us
  // Into a buffer kept from read to read (taken from the member, as the batch below: a listener's
  // nested event loop may read meanwhile): a fresh buffer per read, as readAll() makes, cost more
  // in page faults than copying the bytes into it.
  QByteArray chunk;
  chunk.swap(read_buffer_);
  chunk.resize(socket->bytesAvailable());
  chunk.resize(std::max<qint64>(socket->read(chunk.data(), chunk.size()), 0));
  counters_.bytes += chunk.size();

  batch_.clear();
  batch_lines_.resize(0);  // keeps its capacity
  int bad = 0;
  QString last_error;
  QString drop_reason;
  QStringList ignored;  // what to name in ignoredInput(), at most one type and one field
  const bool was_believed = c->believed;
  const bool within_limit =
      c->lines.feed(chunk.constData(), std::size_t(chunk.size()), [&](std::string_view line) {
        if (!drop_reason.isEmpty()) return;
        if (!c->believed) {
          if (!handleHello(*c, line, &drop_reason)) return;
          ++counters_.messages;
          return;
        }
        wire::Decoded d = wire::decode(line);
        if (d.kind == wire::Decoded::Kind::Blank) return;
        if (d.kind == wire::Decoded::Kind::Ignored) {
          // Kept for metrics.jsonl: a later version of ddpdesk may read what this one cannot.
          ++counters_.ignored;
          batch_lines_.append(line.data(), qsizetype(line.size())).append('\n');
          if (!std::exchange(c->reportedType, true)) ignored << QString::fromStdString(d.ignored);
          return;
        }
        if (d.kind == wire::Decoded::Kind::Malformed) {
          ++bad;
          last_error = QString::fromStdString(d.error);
          return;
        }
        if (d.unknown_fields > 0) {
          counters_.unknownFields += d.unknown_fields;
          if (!std::exchange(c->reportedField, true))
            ignored << QStringLiteral("unknown field '%1' in %2")
                           .arg(QString::fromStdString(d.unknown_field),
                                QString::fromLatin1(wire::type_name(*d.message)));
        }
        if (wire::rank_of(*d.message) != c->rank ||
            std::holds_alternative<wire::Hello>(*d.message)) {
          ++bad;
          last_error = std::holds_alternative<wire::Hello>(*d.message)
                           ? QStringLiteral("second hello")
                           : QStringLiteral("message for rank %1 on rank %2's connection")
                                 .arg(wire::rank_of(*d.message))
                                 .arg(c->rank);
          return;
        }
        ++counters_.messages;
        batch_.push_back(std::move(*d.message));
        batch_lines_.append(line.data(), qsizetype(line.size())).append('\n');
      });
  counters_.malformed += bad;
  if (!drop_reason.isEmpty()) {
    drop(socket, drop_reason);
    return;
  }
  if (!was_believed && c->believed) {
    ++counters_.authenticated;
    Q_EMIT peerAuthenticated(std::get<wire::Hello>(batch_.front()));
  }
  chunk.resize(0);
  if (read_buffer_.isNull()) read_buffer_.swap(chunk);
  // Moved out: a listener may start another read (nested event loop) that refills the members.
  if (!batch_.empty() || !batch_lines_.isEmpty()) {
    std::vector<wire::Message> messages;
    messages.swap(batch_);
    QByteArray lines;
    lines.swap(batch_lines_);
    Q_EMIT messagesReceived(messages, lines);
    // Both go back for the next read, their capacity kept: growing them again from nothing moved
    // every message several times per read, and touched fresh pages for the lines each time.
    messages.clear();
    if (batch_.empty()) batch_.swap(messages);
    lines.resize(0);  // (a fresh copy only if a listener kept the lines)
    if (batch_lines_.isNull()) batch_lines_.swap(lines);
  }
  if (bad > 0) Q_EMIT malformedLines(c->rank, bad, last_error);
  for (const QString& what : ignored) Q_EMIT ignoredInput(c->rank, what);
  if (!within_limit && connections_.contains(socket))
    drop(socket, QStringLiteral("line longer than %1 bytes").arg(wire::kMaxLineBytes));
}

void MetricsServer::onDisconnected(QLocalSocket* socket) {
  auto it = connections_.find(socket);
  if (it == connections_.end()) return;
  std::shared_ptr<Connection> c = *it;
  if (socket->bytesAvailable() > 0) onReadyRead(socket);
  if (!connections_.contains(socket)) return;  // dropped while reading the rest
  // An unfinished last line means the peer died mid-write.
  if (c->believed && !c->lines.pending().empty()) {
    ++counters_.malformed;
    Q_EMIT malformedLines(c->rank, 1, QStringLiteral("unterminated last line"));
  }
  forget(socket);
  if (c->believed) Q_EMIT peerDisconnected(c->rank);
  if (connections_.isEmpty()) Q_EMIT allDisconnected();
}

void MetricsServer::drop(QLocalSocket* socket, const QString& reason) {
  auto it = connections_.find(socket);
  if (it == connections_.end()) return;
  const int rank = (*it)->believed ? (*it)->rank : -1;
  forget(socket);
  ++counters_.dropped;
  Q_EMIT connectionDropped(rank, reason);
  if (connections_.isEmpty()) Q_EMIT allDisconnected();
}

void MetricsServer::forget(QLocalSocket* socket) {
  connections_.remove(socket);
  socket->disconnect(this);
  socket->abort();
  socket->deleteLater();
}

}  // namespace ddpdesk

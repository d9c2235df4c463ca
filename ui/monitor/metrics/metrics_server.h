// MetricsServer: the monitor's end of the wire. One QLocalServer per run, its socket in a fresh
// directory only this user can enter, removed on every exit the monitor lives through and swept
// at the next start otherwise (socket_dir_guard.h). A connection is believed only after its first
// line is a hello carrying the run's token; until then nothing it says is used. Each connection
// buffers partial lines, decodes many lines per read and is dropped on its own when it misbehaves
// (oversized line, bad hello, silence before hello); malformed lines are counted, never fatal.
// Lines of a message type this codec does not know, and unknown fields, are counted and ignored:
// a newer worker's additions (see docs/wire-format.md).
#pragma once

#include <QByteArray>
#include <QHash>
#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "wire.h"

class QLocalServer;
class QLocalSocket;

namespace ddpdesk {
class SocketDirGuard;
}

namespace ddpdesk {

class MetricsServer : public QObject {
  Q_OBJECT
 public:
  struct Counters {
    qint64 messages = 0;       // decoded and accepted messages (hello included)
    qint64 malformed = 0;      // lines rejected by the codec or not matching the sender's rank
    qint64 ignored = 0;        // well-formed lines of a message type this codec does not know
    qint64 unknownFields = 0;  // fields of accepted messages that this codec does not know
    qint64 dropped = 0;        // connections closed by the server for misbehaving
    qint64 authenticated = 0;  // connections that passed the hello check
    qint64 bytes = 0;          // bytes read from every connection
  };

  explicit MetricsServer(QObject* parent = nullptr);
  ~MetricsServer() override;

  // Creates the private directory and starts listening. token: what every hello must carry;
  // world > 0: hellos must also claim this world size and a rank below it.
  bool listen(const QString& token, int world = 0, QString* error = nullptr);
  // Drops every connection, removes the socket and its directory.
  void close();

  bool isListening() const;
  QString socketPath() const;   // what DDPDESK_MONITOR carries
  int connectionCount() const;  // open connections, believed or not
  Counters counters() const { return counters_; }

  // Unbelieved connections are dropped when no hello arrives within this time (default 15 s).
  void setHelloTimeout(int ms) { hello_timeout_ms_ = ms; }

 Q_SIGNALS:
  // A connection passed the hello check (the hello's token is blanked).
  void peerAuthenticated(const ddpdesk::wire::Hello& hello);
  // Every message decoded from one read of one connection, in order (hellos excluded), and the
  // exact lines they came from, each ending in '\n' (what the run's metrics.jsonl keeps), with
  // the lines of unknown types among them (no message; kept for a later version to read).
  void messagesReceived(const std::vector<ddpdesk::wire::Message>& messages,
                        const QByteArray& lines);
  // Lines of a believed connection that were rejected in one read: how many and the last reason.
  void malformedLines(int rank, int count, const QString& lastError);
  // The first line of an unknown type, and the first unknown field, on a connection: what was
  // ignored ("unknown type 'x'", "unknown field 'y' in step"). Later ones are only counted.
  void ignoredInput(int rank, const QString& what);
  // The server closed a connection: rank is -1 when it never passed the hello check.
  void connectionDropped(int rank, const QString& reason);
  // A believed peer closed its end (normally: the rank exited).
  void peerDisconnected(int rank);
  // The last open connection is gone.
  void allDisconnected();

 private:
  struct Connection;

  void onNewConnection();
  void onReadyRead(QLocalSocket* socket);
  void onDisconnected(QLocalSocket* socket);
  bool handleHello(Connection& c, std::string_view line, QString* why);
  void drop(QLocalSocket* socket, const QString& reason);
  void forget(QLocalSocket* socket);

  QLocalServer* server_ = nullptr;
  QString dir_path_;                       // the private socket directory (created by guard_)
  std::unique_ptr<SocketDirGuard> guard_;  // the directory does not outlive this process
  QString socket_path_;
  QByteArray token_;
  int world_ = 0;
  int hello_timeout_ms_ = 15000;
  QHash<QLocalSocket*, std::shared_ptr<Connection>> connections_;
  Counters counters_;
  // What one read produced (filled by the line callback and handleHello).
  std::vector<wire::Message> batch_;
  QByteArray batch_lines_;
  QByteArray read_buffer_;  // what one read of a connection brought
};

}  // namespace ddpdesk

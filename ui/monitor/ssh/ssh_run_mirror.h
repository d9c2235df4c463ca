// SshRunMirror: follows a run directory on another host through one long-lived ssh process that
// runs the remote follow loop (remote_follow_script.h) and mirrors what it reports into a
// private local directory (RemoteRecordMirror), which a RunFollower then follows like any other run
// directory. Nothing is written on the remote side and nothing listens there. The mirror
// directory is removed, and ssh killed and reaped, when the object goes.
//
// A connection lost after connected() is tried again with a growing pause (1, 2, 4, 8, then
// every 15 s) for monitorSettings().sshReconnectSeconds (120 s unless DDPDESK_SSH_RECONNECT_S says
// otherwise); each new connection hands the loop what the mirror holds, so it goes on at the
// mirrored offsets: no byte is read twice or skipped. connectionLost() and reconnected() tell
// the way (one line each).
//
// failed() comes at most once, with one line: before connected(), the run cannot be followed
// (no ssh client, host unreachable, key refused, no such directory: ssh's own words where it
// has them); after it, the connection was lost and could not be had back in time, or the
// directory is gone.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>
#include <memory>

#include "ssh/remote_record_mirror.h"
#include "ssh/ssh_target.h"

namespace ddpdesk {

class SshRunMirror : public QObject {
  Q_OBJECT
 public:
  explicit SshRunMirror(SshTarget target, QObject* parent = nullptr);
  ~SshRunMirror() override;

  // Creates the mirror directory and starts ssh; false with *error when the directory cannot be
  // made. `pollMs`: the remote loop's interval.
  // How often a followed remote run's files are read, unless a caller asks otherwise.
  static constexpr int kPollMs = 500;
  bool start(int pollMs = kPollMs, QString* error = nullptr);
  void stop();  // kills ssh (no failed())

  QString directory() const;  // the local mirror of the run directory
  const SshTarget& target() const { return target_; }
  const RemoteRecordMirror& stream() const { return *stream_; }
  RemoteRecordMirror& stream() { return *stream_; }
  bool isConnected() const { return stream_ && stream_->hasHello(); }

 Q_SIGNALS:
  void connected();
  void polled();  // one remote poll is in the mirror
  // The connection went (`text`: what ssh said and when the next try is) / came back.
  void connectionLost(const QString& text);
  void reconnected(const QString& text);
  void failed(const QString& why);

 private:
  void launch();
  void dropSsh();
  void onOutput();
  void onFinished(int exitCode, QProcess::ExitStatus status);
  void onDeadline();
  void connectionEnded(const QString& why);
  void fail(const QString& why);

  SshTarget target_;
  std::unique_ptr<QTemporaryDir> dir_;
  std::unique_ptr<RemoteRecordMirror> stream_;
  QProcess* ssh_ = nullptr;  // a child of this; the current connection
  QTimer connect_deadline_;
  QTimer retry_;
  QElapsedTimer lost_since_;  // valid while reconnecting
  QString program_;
  QString poll_seconds_;
  int attempts_ = 0;  // since the connection was lost
  bool ever_connected_ = false;
  bool failed_ = false;
};

}  // namespace ddpdesk

// SshCommand: runs one command on another host through ssh (SshTarget::command) and reports its
// exit code, stdout and stderr once it ends, without blocking: an asynchronous QProcess, a time
// limit after which ssh is killed, and ssh's own failure (no client, host unreachable, key
// refused; exit status 255) as one line. For short commands: a pid check, kill, later sbatch /
// squeue / scancel on a cluster's login node. One command per object at a time; destroying it
// kills a command still running (no ssh outlives it).
#pragma once

#include <QByteArray>
#include <QObject>
#include <QProcess>
#include <QStringList>
#include <QTimer>

#include "ssh/ssh_target.h"

namespace ddpdesk {

class SshCommand : public QObject {
  Q_OBJECT
 public:
  struct Result {
    bool ok = false;    // the remote command ran and exited 0
    bool ran = false;   // the remote command ran (whatever its exit code)
    int exitCode = -1;  // the remote command's, when it ran
    QByteArray out;     // its stdout
    QByteArray err;     // its stderr (ssh's own messages too)
    QString error;      // one line when !ok: ssh's message, the timeout, or the command's stderr
  };

  explicit SshCommand(SshTarget target, QObject* parent = nullptr);
  ~SshCommand() override;

  // Starts `remoteArgv` on the host (ignored while one runs); finished() follows exactly once.
  void start(const QStringList& remoteArgv, int timeoutMs = 30000);
  bool isRunning() const { return process_.state() != QProcess::NotRunning; }
  // Kills ssh now; finished() follows with "cancelled".
  void cancel();
  const SshTarget& target() const { return target_; }

 Q_SIGNALS:
  void finished(const ddpdesk::SshCommand::Result& result);

 private:
  void onFinished(int exitCode, QProcess::ExitStatus status);
  void onError(QProcess::ProcessError e);
  void finish(Result r);

  SshTarget target_;
  QProcess process_;
  QTimer deadline_;
  QString killedFor_;  // "timed out after N s" / "cancelled"
  QString program_;
  bool done_ = true;
};

}  // namespace ddpdesk

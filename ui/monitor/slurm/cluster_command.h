// ClusterCommand: runs one cluster tool (sbatch, squeue, sacct, scontrol, scancel) without
// blocking: argv in, exit status, stdout and stderr out, through QProcess, with a timeout. Every
// Slurm command ddpdesk runs goes through here, so running them elsewhere (on a login node
// through `ssh host --`) is a matter of the prefix, not of the callers.
#pragma once

#include <QByteArray>
#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>
#include <optional>

#include "ssh/ssh_target.h"

namespace ddpdesk {

class ClusterCommand : public QObject {
  Q_OBJECT
 public:
  struct Result {
    QStringList argv;
    bool started = false;  // false: the program could not be run (missing, not executable)
    bool timedOut = false;
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
    QString via;  // the login node it ran on through ssh (user@host), empty when run here
    bool ok() const { return started && !timedOut && exitCode == 0; }
    // One line for a person: the tool's own stderr when it has one, else what went wrong; through
    // ssh, ssh's own complaint when ssh failed (exit 255) and a missing tool named as such.
    QString problem() const;
  };
  using Callback = std::function<void(const Result&)>;

  explicit ClusterCommand(QObject* parent = nullptr);
  ~ClusterCommand() override;

  // Words put before every command (empty: run it here).
  void setPrefix(const QStringList& words) { prefix_ = words; }
  QStringList prefix() const { return prefix_; }
  // Runs every command on a login node through ssh instead (SshTarget::command: each word quoted
  // for the remote shell; the target's path is not used).
  void setRemote(const SshTarget& login) { remote_ = login; }
  const std::optional<SshTarget>& remote() const { return remote_; }
  void setTimeout(int ms) { timeout_ms_ = ms; }

  // Starts `argv` (argv[0] the program) and calls `done` once, on this object's thread, when it
  // has ended, failed to start or run past the timeout (then it is killed). Commands still
  // running when this object is destroyed are killed and their callbacks never called.
  // `input`: written to the command's stdin, which is then closed (empty: none).
  void run(const QStringList& argv, Callback done, const QByteArray& input = {});
  int running() const { return running_; }

 private:
  QStringList prefix_;
  std::optional<SshTarget> remote_;
  int timeout_ms_ = 30000;
  int running_ = 0;
};

}  // namespace ddpdesk

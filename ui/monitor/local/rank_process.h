// RankProcess: one worker process of a run. Starts it so that it dies with the monitor
// (PR_SET_PDEATHSIG) in a process group of its own, captures stdout and stderr line by line into
// rank-N.log and a signal, keeps the last stderr lines for failure reports, and records how it
// ended. SIGKILL goes to the whole group, and what is left of the group when the rank ends is
// killed too: a rank's children (a Python script's DataLoader workers) never outlive it.
#pragma once

#include <QFile>
#include <QObject>
#include <QProcess>
#include <QStringList>

#include "metrics/line_buffer.h"

namespace ddpdesk {

class RankProcess : public QObject {
  Q_OBJECT
 public:
  // How the process ended, filled once it has.
  struct Exit {
    bool exited = false;  // the process is gone (or never started)
    bool startFailed = false;
    bool crashed = false;     // killed by a signal
    int exitCode = -1;        // valid when exited normally
    int signal = 0;           // valid when crashed
    bool killedByUs = false;  // we sent SIGKILL (grace period over, or kill())
    QString startError;
  };

  RankProcess(int rank, QObject* parent = nullptr);
  ~RankProcess() override;

  // How the program starts with SIGINT and SIGTERM: AsTheyAre (the monitor's dispositions, none
  // blocked), or Blocked from birth (the mask survives exec), for a program that takes them on
  // a thread of its own, as ddpdesk-worker does.
  enum class StopSignals { AsTheyAre, Blocked };
  // `workdir` empty: the monitor's working directory.
  void start(const QString& program, const QStringList& args, const QProcessEnvironment& env,
             const QString& logPath, StopSignals stopSignals = StopSignals::AsTheyAre,
             const QString& workdir = QString());
  void terminate();  // SIGTERM to the rank: its graceful stop
  void kill();       // SIGKILL to the rank's process group
  // For destructors only: SIGKILL and reap synchronously (the one place that may block, briefly).
  void killAndReap();

  int rank() const { return rank_; }
  qint64 pid() const { return pid_; }  // kept after exit so tests can check the pid is gone
  bool isRunning() const { return !exit_.exited && proc_->state() != QProcess::NotRunning; }
  const Exit& exitInfo() const { return exit_; }
  QStringList stderrTail() const { return tail_; }
  // "exited with code 3" / "was killed by signal 6 (SIGABRT)" / "could not start: ..."
  QString describeExit() const;

  static int tailLines() { return 12; }

 Q_SIGNALS:
  void line(int rank, bool isStderr, const QString& text);
  void started(int rank);
  void finished(int rank);

 private:
  void killGroup() const;
  void readChannel(QProcess::ProcessChannel channel);
  void emitLine(bool isStderr, std::string_view text);
  void onFinished(int code, QProcess::ExitStatus status);
  void onError(QProcess::ProcessError error);

  int rank_;
  QProcess* proc_;
  qint64 pid_ = 0;
  Exit exit_;
  QStringList tail_;
  QFile log_;
  LineBuffer out_;
  LineBuffer err_;
};

}  // namespace ddpdesk

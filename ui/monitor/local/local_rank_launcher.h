// LocalRankLauncher: the ranks of a local run, as processes on this machine. Per run it picks a
// free MASTER_PORT and a fresh token (the metrics server admits only ranks that present it),
// creates one RankProcess per rank and starts each as
// `<worker> --config <rundir>/spec.json --run-dir <rundir> [--resume X]` with torchrun's
// environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
// MASTER_PORT) plus DDPDESK_MONITOR (the metrics socket) and DDPDESK_TOKEN. It signals and
// reaps them on request; what a rank's ending means for the run (the failure policy) is the
// RunController's. Destroying it kills and reaps every rank still running.
#pragma once

#include <QObject>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <vector>
#include "local/rank_process.h"

namespace ddpdesk {

class RankProcess;
struct RankCommand;

class LocalRankLauncher : public QObject {
  Q_OBJECT
 public:
  explicit LocalRankLauncher(QObject* parent = nullptr);
  ~LocalRankLauncher() override;

  // Added to every rank's environment (after the system environment, before the run's own).
  void setExtraEnvironment(const QProcessEnvironment& env) { extra_env_ = env; }
  // A free port on 127.0.0.1 for MASTER_PORT and a new random token, for the next run. False
  // with *error (one line) when no port is free.
  bool prepare(QString* error = nullptr);
  // Only a new MASTER_PORT (a restarted run's ranks: the token stays the server's).
  bool choosePort(QString* error = nullptr);
  quint16 port() const { return port_; }
  QString token() const { return token_; }

  // The worker's arguments for a run in `runDir`, continuing from `resume` when not empty.
  static QStringList workerArguments(const QString& runDir, const QString& resume);
  // Rank `rank`'s environment: the system's without TORCHELASTIC_* (a torchrun that launched
  // the monitor is not the ranks' agent), the extra environment, torchrun's variables with the
  // prepared port, the metrics socket and the token; OMP_NUM_THREADS=1 unless set.
  QProcessEnvironment rankEnvironment(int rank, int world, const QString& socketPath) const;

  // Forgets the previous run's ranks (their objects may still be delivering the signal that led
  // here: they go later, and no longer signal).
  void clear();
  // Forgets the previous run's ranks and creates `world` new ones, not started: their signals
  // are connected before any rank starts, so one failing to start is seen at once.
  void create(int world);
  // Starts rank `rank` with rankEnvironment(), its output going to `logPath`. A program that
  // takes SIGINT/SIGTERM on a thread of its own (ddpdesk-worker: engine/runtime/stop_signals.h)
  // starts with both blocked (RankProcess::StopSignals::Blocked), so a stop during its loading
  // waits for that thread; any other program starts with them as they are.
  void startRank(int rank, const QString& program, const QStringList& args,
                 const QString& socketPath, const QString& logPath,
                 RankProcess::StopSignals stopSignals = RankProcess::StopSignals::AsTheyAre);
  // The same for `command` (rank_command.h): its environment is added to rankEnvironment().
  void startRank(int rank, const RankCommand& command, const QString& socketPath,
                 const QString& logPath);

  int size() const { return int(ranks_.size()); }
  RankProcess* rank(int r) const { return ranks_[r]; }
  const std::vector<RankProcess*>& ranks() const { return ranks_; }
  // Whether every rank has exited (or never started).
  bool allExited() const;
  void terminateAll();  // SIGTERM: the workers' graceful stop
  void killAll();       // SIGKILL
  // For destructors: SIGKILL every rank, then reap each (nothing outlives the run's owner).
  void killAndReapAll();

 Q_SIGNALS:
  // Every line a rank writes to stdout or stderr.
  void line(int rank, bool isStderr, const QString& text);
  void rankStarted(int rank, qint64 pid);
  void rankFinished(int rank);

 private:
  QProcessEnvironment extra_env_;
  quint16 port_ = 0;
  QString token_;
  std::vector<RankProcess*> ranks_;
};

}  // namespace ddpdesk

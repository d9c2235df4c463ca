// SlurmJob: one batch job through Slurm's tools (all run by a ClusterCommand): submit with
// `sbatch --parsable`, then track it — squeue while it is queued or running, and once squeue no
// longer lists it, `scontrol show job` (slurmctld remembers ended jobs for MinJobAge, 300 s by
// default) or, when slurmctld has forgotten it, `sacct` (which needs accounting, slurmdbd).
// Stop signals a running job's steps (`scancel --state=RUNNING --signal=TERM`: the ranks vote,
// checkpoint and exit 0) and cancels a job that is still pending (`scancel --state=PENDING`);
// kill cancels it (`scancel`). A job that Slurm requeues (its restart count grows) is pending
// again, never ended: Slurm reports it COMPLETING (taken as pending, REQUEUED), then PENDING,
// never with an ended state; a job reported ended has ended, requeued before or not
// (slurm_job.cpp, update).
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include "slurm/slurm_status.h"

namespace ddpdesk {

class ClusterCommand;

class SlurmJob : public QObject {
  Q_OBJECT
 public:
  explicit SlurmJob(QObject* parent = nullptr);
  ~SlurmJob() override;

  ClusterCommand* commands() const { return commands_; }
  void setPollInterval(int ms) { poll_.setInterval(ms); }

  // Submits `scriptPath` (its directory is sbatch's working directory). submitted() or
  // submitFailed() follows.
  void submit(const QString& scriptPath);
  // Follows a job submitted earlier (no sbatch).
  void track(const QString& jobId);
  void stop();  // graceful (see above); stopSent() tells what was done

  void cancel();  // scancel

  QString jobId() const { return id_; }
  const SlurmJobStatus& status() const { return status_; }
  // Which tool told how the job ended: "squeue", "scontrol" or "sacct".
  QString endSource() const { return end_source_; }

 Q_SIGNALS:
  void submitted(const QString& jobId);
  void submitFailed(const QString& line);  // sbatch's own words, one line
  // Stop's scancel went through: the running job's steps were signalled, or (wasPending) the job
  // was still pending and is cancelled.
  void stopSent(bool wasPending);
  void statusChanged(const ddpdesk::SlurmJobStatus& status);
  void ended(const ddpdesk::SlurmJobStatus& status);
  // A query or scancel failed (the job goes on being tracked).
  void warning(const QString& text);

 private:
  void poll();
  void stopRound(int round);
  void askAfterQueue();
  void askSacct();
  void update(const SlurmJobStatus& s, const QString& source);

  ClusterCommand* commands_;
  QTimer poll_;
  QString id_;
  SlurmJobStatus status_;
  bool known_ = false;  // status_ was set by a tool
  bool querying_ = false;
  bool ended_ = false;
  QString end_source_;
  int lost_polls_ = 0;     // squeue and both later tools knew nothing
  int ran_restarts_ = -1;  // the restart count last seen RUNNING (-1: none)
};

}  // namespace ddpdesk

// SlurmBackend (slurm_backend.h) following a job that Slurm requeued (spec slurm_requeue: a node
// failure, `scontrol requeue`): Slurm's restart count of the job grew (squeue's RestartCnt,
// scontrol's Restarts), or, from a tool that does not say it, the job went back to pending after
// it ran. Its batch script runs again and its ranks resume from the run's newest checkpoint
// (slurm_script.h). The run does not end: it is a restart as a local run's (local_backend.cpp
// restartIfDue), counted in restarts(), recorded as a "restart" event, said in monitor.log, the
// window and headless. The ranks' metrics files go on with a new hello each: the follower of a
// job's files polls on after its ranks ended (RunFollower::setFollowAfterEnd).
#include "metrics/metrics_store.h"
#include "run/run_directory.h"
#include "slurm/slurm_backend.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_status.h"

namespace ddpdesk {

bool SlurmBackend::followRequeue(const SlurmJobStatus& s) {
  using S = SlurmJobStatus::State;
  bool requeued = false;
  if (s.restarts >= 0) {
    // The first count seen is where this monitor began (an attach may find earlier requeues).
    requeued = restarts_seen_ >= 0 && s.restarts > restarts_seen_;
    restarts_seen_ = s.restarts;
  } else {
    requeued = s.state == S::Pending && job_ran_;
  }
  job_ran_ = s.state == S::Running || (job_ran_ && !requeued);
  if (!requeued) return false;
  const int attempt = run().restarts() + 1;
  const bool knownReason = !s.reason.isEmpty() && s.reason != QLatin1String("None");
  const QString why = knownReason ? s.reason : describeSlurmStatus(s);
  const QString cause =
      QStringLiteral("job %1 was requeued by Slurm; %2").arg(job_->jobId(), describeSlurmStatus(s));
  if (dir())
    dir()->logEvent(QStringLiteral("job %1 requeued (restart %2): %3")
                        .arg(job_->jobId())
                        .arg(attempt)
                        .arg(why));
  // Slurm decides when and how often (its own limit): no delay and no maximum to tell.
  announceRestart(attempt, 0, cause, 0);
  beginRestart();
  return true;
}

}  // namespace ddpdesk

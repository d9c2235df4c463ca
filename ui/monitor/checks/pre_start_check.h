// The checks every run goes through before any of its ranks is spawned, wherever it is started
// from (headless, the queue, a sweep; the form's Start gates on the same two answers as they
// arrive): what only this machine can tell about a spec. Its files and environment
// (local_start_check.h: also checked by RunController::start), a CUDA run it cannot hold (the
// worker's device probe, device_probe.h), user-task files or a checkpoint to resume from that the
// worker's dry run rejects (task_check.h) are bad input: one line, nothing started; so is a Slurm
// job sbatch would refuse
// (`sbatch --test-only`, slurm_submit_check.h: a partition, account or time limit the cluster
// does not have; through a login node, asked there over ssh). A probe or a check that itself fails
// is no verdict on the spec: a warning, and the ranks report the rest as they start.
// Widget-free: part of the monitor core.
#pragma once

#include <QObject>
#include <QString>

#include "checks/device_probe.h"
#include "checks/task_check.h"
#include "run_spec.h"
#include "slurm/slurm_submit_check.h"

namespace ddpdesk {

struct PreStartVerdict {
  QString problem;  // the one line why the spec cannot run here; empty: it may start
  QString warning;  // a check that could not answer (the run starts all the same)
  bool ok() const { return problem.isEmpty(); }
};

// Whether a spec needs any of the checks (a CUDA device, a user task, or a Slurm job).
bool needsPreStartCheck(const RunSpec& spec);
// The verdict from the answers; either may be null where the spec does not need it.
PreStartVerdict preStartVerdict(const RunSpec& spec, const ProbeResult* probe,
                                const TaskCheckResult* check);
// Asks the worker and waits for the answers: for headless, not the GUI thread.
PreStartVerdict checkBeforeStartNow(const RunSpec& spec, const QString& worker);

// The same in the background (the queue, in the window and headless): the probe, then the dry
// run, then sbatch --test-only, each only where the spec needs it.
class PreStartCheck : public QObject {
  Q_OBJECT
 public:
  explicit PreStartCheck(QObject* parent = nullptr);
  ~PreStartCheck() override;

  // Starts checking `spec` with `worker`; a check still running is abandoned (its answer never
  // comes). finished() may come before this returns when the spec needs no check.
  void start(const RunSpec& spec, const QString& worker);
  void cancel();
  bool running() const { return running_; }

 Q_SIGNALS:
  void finished(const QString& problem, const QString& warning);

 private:
  void onProbe(const ProbeResult& probe);
  void onCheck(const TaskCheckResult& check);
  void onSlurm(const SlurmSubmitVerdict& verdict);
  void finish();

  DeviceProbe* probe_ = nullptr;  // children, while running
  TaskCheck* check_ = nullptr;
  SlurmSubmitCheck* slurm_ = nullptr;
  RunSpec spec_;
  QString worker_;
  ProbeResult probeResult_;
  TaskCheckResult checkResult_;
  SlurmSubmitVerdict slurmVerdict_;
  bool probed_ = false;
  bool running_ = false;
};

}  // namespace ddpdesk

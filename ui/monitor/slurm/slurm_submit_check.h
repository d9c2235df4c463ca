// Whether Slurm would take a run's batch job, asked before anything is written: `sbatch
// --test-only` on the script the run would submit (no job is queued). A partition, account,
// time limit or sbatch option the cluster refuses is bad input, in sbatch's own line; no sbatch
// is too. Through a login node (spec.slurm_login) sbatch runs there over ssh with the script on
// its standard input, before anything is created on the cluster; a login node that cannot be
// reached is bad input too. A check that cannot answer (sbatch timed out) is no verdict: a
// warning. One of the pre-start checks (pre_start_check.h), so a single run, the queue and
// sweeps all get it.
#pragma once

#include <QObject>
#include <QString>

#include "run_spec.h"
#include "slurm/cluster_command.h"

namespace ddpdesk {

// sbatch's refusal as one line: its own "sbatch: error: ..." line, or what kept it from running.
QString sbatchFailure(const ClusterCommand::Result& r);

struct SlurmSubmitVerdict {
  QString problem;  // Slurm would refuse the job (or there is no sbatch)
  QString warning;  // sbatch could not answer
};

class SlurmSubmitCheck : public QObject {
  Q_OBJECT
 public:
  explicit SlurmSubmitCheck(QObject* parent = nullptr);
  ~SlurmSubmitCheck() override;
  // Asks sbatch about `spec`'s script (its worker `worker`); finished() follows, never at once.
  void start(const RunSpec& spec, const QString& worker);
  // The same, waiting for the answer (headless, before its event loop).
  static SlurmSubmitVerdict checkNow(const RunSpec& spec, const QString& worker);

 Q_SIGNALS:
  void finished(const ddpdesk::SlurmSubmitVerdict& verdict);

 private:
  ClusterCommand* commands_;
  QString script_;  // the script's temporary file (a local sbatch), removed when answered
};

}  // namespace ddpdesk

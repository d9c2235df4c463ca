#include "checks/pre_start_check.h"

#include <optional>

#include "checks/local_start_check.h"

namespace ddpdesk {
namespace {

constexpr int kProbeTimeoutMs = 60000;
constexpr int kCheckTimeoutMs = 120000;

// A Slurm job's GPUs are on its nodes: this machine's count says nothing about them.
bool needsProbe(const RunSpec& spec) {
  return spec.device == "cuda" && !spec.is_slurm();
}

// sbatch --test-only on this machine, or on the login node over ssh for a job sent through one.
bool needsSubmitCheck(const RunSpec& spec) {
  return spec.is_slurm();
}

void addSlurmVerdict(PreStartVerdict* v, const SlurmSubmitVerdict& slurm) {
  v->problem = slurm.problem;
  if (!slurm.warning.isEmpty())
    v->warning =
        v->warning.isEmpty() ? slurm.warning : v->warning + QStringLiteral("; ") + slurm.warning;
}

// The worker's dry run: for a user task's files, and for a checkpoint to resume from.
bool needsDryRun(const RunSpec& spec) {
  return needsTaskCheck(spec) || needsResumeCheck(spec);
}

}  // namespace

bool needsPreStartCheck(const RunSpec& spec) {
  return needsProbe(spec) || needsDryRun(spec) || needsSubmitCheck(spec);
}

PreStartVerdict preStartVerdict(const RunSpec& spec, const ProbeResult* probe,
                                const TaskCheckResult* check) {
  PreStartVerdict v;
  if (probe) v.problem = cudaShortage(spec, *probe);
  if (!v.problem.isEmpty() || !check) return v;
  if (check->status == TaskCheckResult::Status::BadInput)
    v.problem = check->error;
  else if (!check->ok())
    v.warning = (needsTaskCheck(spec) ? QStringLiteral("could not check the task's files: ")
                                      : QStringLiteral("could not check the checkpoint: ")) +
                check->error;
  return v;
}

PreStartVerdict checkBeforeStartNow(const RunSpec& spec, const QString& worker) {
  if (const QString local = localStartProblem(spec, QProcessEnvironment::systemEnvironment());
      !local.isEmpty())
    return {local, {}};
  std::optional<ProbeResult> probe;
  if (needsProbe(spec)) {
    probe = probeDevicesNow(worker, kProbeTimeoutMs);
    if (!cudaShortage(spec, *probe).isEmpty()) return preStartVerdict(spec, &*probe, nullptr);
  }
  std::optional<TaskCheckResult> check;
  if (needsDryRun(spec)) check = runTaskCheckNow(worker, spec, kCheckTimeoutMs);
  PreStartVerdict v = preStartVerdict(spec, probe ? &*probe : nullptr, check ? &*check : nullptr);
  if (v.ok() && needsSubmitCheck(spec))
    addSlurmVerdict(&v, SlurmSubmitCheck::checkNow(spec, worker));
  return v;
}

PreStartCheck::PreStartCheck(QObject* parent) : QObject(parent) {}

PreStartCheck::~PreStartCheck() = default;

void PreStartCheck::cancel() {
  // Deleting them kills what they run and drops their answers.
  delete probe_;
  probe_ = nullptr;
  delete check_;
  check_ = nullptr;
  delete slurm_;
  slurm_ = nullptr;
  running_ = false;
}

void PreStartCheck::start(const RunSpec& spec, const QString& worker) {
  cancel();
  spec_ = spec;
  worker_ = worker;
  probed_ = false;
  running_ = true;
  if (!needsProbe(spec)) {
    onProbe(ProbeResult());
    return;
  }
  probed_ = true;
  probe_ = new DeviceProbe(this);
  connect(probe_, &DeviceProbe::finished, this, &PreStartCheck::onProbe);
  probe_->start(worker, kProbeTimeoutMs);
}

void PreStartCheck::onProbe(const ProbeResult& probe) {
  probeResult_ = probe;
  if (probed_ && !cudaShortage(spec_, probe).isEmpty()) {
    finish();
    return;
  }
  if (!needsDryRun(spec_)) {
    onCheck(TaskCheckResult());
    return;
  }
  check_ = new TaskCheck(this);
  connect(check_, &TaskCheck::finished, this, &PreStartCheck::onCheck);
  check_->start(worker_, spec_, kCheckTimeoutMs);
}

void PreStartCheck::onCheck(const TaskCheckResult& check) {
  checkResult_ = check;
  const PreStartVerdict v =
      preStartVerdict(spec_, probed_ ? &probeResult_ : nullptr, check_ ? &checkResult_ : nullptr);
  if (!v.ok() || !needsSubmitCheck(spec_)) {
    finish();
    return;
  }
  slurm_ = new SlurmSubmitCheck(this);
  connect(slurm_, &SlurmSubmitCheck::finished, this, &PreStartCheck::onSlurm);
  slurm_->start(spec_, worker_);
}

void PreStartCheck::onSlurm(const SlurmSubmitVerdict& verdict) {
  slurmVerdict_ = verdict;
  finish();
}

void PreStartCheck::finish() {
  PreStartVerdict v =
      preStartVerdict(spec_, probed_ ? &probeResult_ : nullptr, check_ ? &checkResult_ : nullptr);
  if (v.ok() && slurm_) addSlurmVerdict(&v, slurmVerdict_);
  running_ = false;
  // Not deleted here: this runs inside their own finished() signal. Children, so that the
  // last ones go with this object even when no event loop runs any more.
  if (probe_) probe_->deleteLater();
  if (check_) check_->deleteLater();
  if (slurm_) slurm_->deleteLater();
  probe_ = nullptr;
  check_ = nullptr;
  slurm_ = nullptr;
  Q_EMIT finished(v.problem, v.warning);
}

}  // namespace ddpdesk

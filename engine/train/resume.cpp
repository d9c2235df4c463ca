#include "resume.h"

#include <stdexcept>

#include "fused_adam.h"
#include "task.h"

namespace ddpdesk {

ResumePoint resume_run(const RunSpec& spec, Task& task, FusedAdam& optimizer) {
  ResumePoint r;
  try {
    r.checkpoint = resolve_checkpoint(spec.resume);
    load_checkpoint(r.checkpoint, task.state(), optimizer, r.position);
  } catch (const std::runtime_error& e) {
    throw BadInput("resume", e.what());  // load_checkpoint's line names the file and the problem
  }
  const TrainPosition& p = r.position;
  if (p.epoch > spec.epochs || (p.epoch == spec.epochs && p.window > 0))
    throw BadInput({"epochs", std::to_string(spec.epochs), "the checkpoint is already past it"});
  return r;
}

ResumePoint check_resume(const RunSpec& spec, Task& task) {
  AdamOptions adam;
  adam.lr = spec.lr;
  adam.weight_decay = spec.weight_decay;
  FusedAdam optimizer(task.parameters(), adam);
  return resume_run(spec, task, optimizer);
}

}  // namespace ddpdesk

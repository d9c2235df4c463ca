// Continuing a run: the spec's --resume (a run directory or a checkpoint file) loaded into the
// task's tensors and the optimizer, and checked against the spec.
#pragma once

#include <string>

#include "checkpoint.h"
#include "run_spec.h"

namespace ddpdesk {

class FusedAdam;
class Task;

struct ResumePoint {
  std::string checkpoint;  // the file loaded
  TrainPosition position;  // where the run stood in it
};

// Throws BadInput (task.h) naming --resume when there is no readable checkpoint matching the
// task, and naming --epochs when the checkpoint is already past the spec's last epoch.
ResumePoint resume_run(const RunSpec& spec, Task& task, FusedAdam& optimizer);
// The same for a dry run (--check): into a throwaway optimizer of the task's parameters.
ResumePoint check_resume(const RunSpec& spec, Task& task);

}  // namespace ddpdesk

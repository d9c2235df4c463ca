// A run's checkpoints: when a periodic one is due (every N steps, every M minutes) and writing
// one (the checkpoint, pruning to the newest few, the exported model beside it).
#pragma once

#include <cstdint>
#include <string>

#include "checkpoint.h"
#include "run_spec.h"

namespace ddpdesk {

class FusedAdam;
class Task;

class RunCheckpoints {
 public:
  // `now`: seconds on a steady clock; the minutes count from here. `kill_at_step`: the test-only
  // fault (save_checkpoint).
  RunCheckpoints(const RunSpec& spec, double now, std::int64_t kill_at_step = -1);

  // Whether this run writes checkpoints at all (it has a run directory).
  bool enabled() const { return !spec_.run_dir.empty(); }
  // Whether a periodic checkpoint is due after optimizer step `step`.
  bool due(std::int64_t step, double now) const;

  struct Written {
    std::string checkpoint;
    std::string model;  // <run_dir>/model.pt when the task exports one, else empty
  };
  // `pos.train_seconds` must hold the training time so far.
  Written write(Task& task, FusedAdam& optimizer, const TrainPosition& pos, double now);

  // The checkpoint alone, no pruning and no exported model: what a rank writes after an
  // out-of-memory, when other ranks may be writing the same step's at the same moment (each
  // through a temporary file of its own; the same parameters and optimizer state). Returns what
  // became of it, one phrase: "checkpoint of step 11 written" or "... not written: <why>".
  std::string write_alone(Task& task, FusedAdam& optimizer, const TrainPosition& pos);

  const std::string& last() const { return last_; }  // the newest written by this process

 private:
  RunSpec spec_;
  std::string spec_json_;
  std::int64_t kill_at_step_;
  double last_time_;
  std::string last_;
};

}  // namespace ddpdesk

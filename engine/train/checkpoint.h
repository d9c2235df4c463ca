// Checkpoints: model, optimizer, position in the run and RNG state, written atomically
// (temporary file, fsync, rename, fsync of the directory) so a crash mid-write never replaces a
// good checkpoint with a broken one. Files: <run_dir>/checkpoints/step-<8 digits>.pt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "task.h"  // NamedTensor

namespace ddpdesk {

class FusedAdam;

// Where training stands; saved with every checkpoint and restored on resume.
struct TrainPosition {
  std::int64_t epoch = 0;    // epoch in progress
  std::int64_t window = 0;   // optimizer steps already taken within that epoch
  std::int64_t step = 0;     // optimizer steps since the run began
  std::int64_t samples = 0;  // global training samples since the run began
  double train_seconds = 0;  // training wall time before this process
  // fp16's dynamic loss scale (LossScaler::State in mixed_precision.h); loss_scale 0: none kept.
  double loss_scale = 0;
  std::int64_t scale_growth = 0;
  std::int64_t skipped_steps = 0;
};

std::string checkpoint_dir(const std::string& run_dir);
std::string checkpoint_path(const std::string& run_dir, std::int64_t step);

// `model`: the task's parameters and buffers by name (Task::state()). `kill_at_step` is a
// test-only fault (FaultInjection): in builds with DDPDESK_FAULT_INJECTION, writing the checkpoint
// of that step dies half-way through, as a power cut or kill -9 would; ignored otherwise.
void save_checkpoint(const std::string& path, const std::vector<NamedTensor>& model,
                     FusedAdam& optimizer, const TrainPosition& pos, const std::string& spec_json,
                     std::int64_t kill_at_step = -1);

// Loads into the tensors of `model` (same names and shapes), optimizer and pos. Throws
// std::runtime_error naming the file on any problem.
void load_checkpoint(const std::string& path, const std::vector<NamedTensor>& model,
                     FusedAdam& optimizer, TrainPosition& pos);

// `where` is a checkpoint file or a run directory; for a directory, the newest checkpoint.
// Throws BadInput (field "resume") when there is none.
std::string resolve_checkpoint(const std::string& where);

// Deletes all but the newest `keep` checkpoints in the run directory.
void prune_checkpoints(const std::string& run_dir, int keep);

std::vector<std::string> list_checkpoints(const std::string& run_dir);  // oldest first

}  // namespace ddpdesk

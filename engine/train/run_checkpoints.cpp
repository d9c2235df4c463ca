#include "run_checkpoints.h"

#include "task.h"

namespace ddpdesk {

RunCheckpoints::RunCheckpoints(const RunSpec& spec, double now, std::int64_t kill_at_step)
    : spec_(spec), spec_json_(to_json_text(spec)), kill_at_step_(kill_at_step), last_time_(now) {}

bool RunCheckpoints::due(std::int64_t step, double now) const {
  if (!enabled()) return false;
  const bool by_steps = spec_.checkpoint_every > 0 && step % spec_.checkpoint_every == 0;
  const bool by_time =
      spec_.checkpoint_minutes > 0 && now - last_time_ >= spec_.checkpoint_minutes * 60;
  return by_steps || by_time;
}

RunCheckpoints::Written RunCheckpoints::write(Task& task, FusedAdam& optimizer,
                                              const TrainPosition& pos, double now) {
  Written w;
  w.checkpoint = checkpoint_path(spec_.run_dir, pos.step);
  last_time_ = now;
  save_checkpoint(w.checkpoint, task.state(), optimizer, pos, spec_json_, kill_at_step_);
  last_ = w.checkpoint;
  prune_checkpoints(spec_.run_dir, spec_.keep_checkpoints);
  // The trained model in a form a person can load elsewhere, next to every checkpoint.
  const std::string model_path = spec_.run_dir + "/model.pt";
  if (task.export_model(model_path)) w.model = model_path;
  return w;
}

}  // namespace ddpdesk

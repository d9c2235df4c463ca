#include "run_checkpoints.h"

#include <filesystem>
#include <stdexcept>

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

std::string RunCheckpoints::write_alone(Task& task, FusedAdam& optimizer,
                                        const TrainPosition& pos) {
  const std::string path = checkpoint_path(spec_.run_dir, pos.step);
  const std::string what = "checkpoint of step " + std::to_string(pos.step);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {  // a periodic one of that step is that step's state
    try {
      save_checkpoint(path, task.state(), optimizer, pos, spec_json_, kill_at_step_);
    } catch (const std::exception& e) {
      // Another rank writing the same step may have won the race (its pruning removes other
      // writers' temporary files): then the checkpoint is there all the same.
      if (!std::filesystem::exists(path, ec)) {
        const std::string why = e.what();
        return what + " not written: " + why.substr(0, why.find('\n'));
      }
    }
  }
  last_ = path;
  return what + " written";
}

}  // namespace ddpdesk

#include "run/worker_arguments.h"

#include <nlohmann/json.hpp>

namespace ddpdesk {
namespace {

// Shown even at their defaults: what a reader of the command needs to know about the run.
bool alwaysShown(const std::string& key) {
  return key == "task" || key == "device" || key == "batch_size" || key == "accum_steps" ||
         key == "epochs" || key == "lr" || key == "seed";
}

}  // namespace

QStringList workerArguments(const RunSpec& spec) {
  const nlohmann::json given = to_json(spec);
  const nlohmann::json defaults = to_json(RunSpec());
  // The form keeps a user task's files while another task is chosen (to switch back); a task
  // that does not read them does not get them.
  const TaskInfo* task = find_task(spec.task);
  const bool userFiles = task && task->user_files;
  QStringList args;
  for (const auto& f : run_spec_fields()) {
    const std::string key = f.key;
    if (is_monitor_field(key) || is_launcher_field(key) || is_script_field(key) ||
        (!userFiles && is_user_task_field(key)))
      continue;
    if (!alwaysShown(key) && given[key] == defaults[key]) continue;
    args << QString::fromStdString(field_label(key, Spelling::Flag));
    args << QString::fromStdString(field_value_text(given[key]));
  }
  return args;
}

}  // namespace ddpdesk

// The one table of tasks and the user task's vocabulary (declared in run_spec.h, where the
// RunSpec that names them is): task_catalog, find_task, known_tasks, known_losses and the
// user task's fields.
#include "run_spec.h"

namespace ddpdesk {

const std::vector<TaskInfo>& task_catalog() {
  static const std::vector<TaskInfo> tasks = {
      {"seed", "the seed script's regression: variable-length samples, masked max", false, false},
      {"fmnist-mlp", "Fashion-MNIST, 784-512-256-10 MLP", true, false},
      {"fmnist-cnn", "Fashion-MNIST, two conv layers + two linear", true, false},
      {"script", "your TorchScript model on your tensor data", false, true},
  };
  return tasks;
}

const TaskInfo* find_task(const std::string& name) {
  for (const auto& t : task_catalog())
    if (name == t.name) return &t;
  return nullptr;
}

const std::vector<std::string>& known_tasks() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : task_catalog()) v.push_back(t.name);
    return v;
  }();
  return names;
}

const std::vector<std::string>& known_losses() {
  static const std::vector<std::string> losses = {"cross_entropy", "mse", "bce", "model"};
  return losses;
}

bool is_user_task_field(const std::string& key) {
  return key == "model" || key == "train_data" || key == "eval_data" || key == "loss" ||
         key == "input_name" || key == "target_name";
}

}  // namespace ddpdesk
